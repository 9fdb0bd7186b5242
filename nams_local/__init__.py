"""nams-local: graph-shaped memory for AI agents, on hosted NAMS or a local SQLite engine.

The public API is re-exported here, lazily: a name is imported from its module the first
time it is used (module ``__getattr__``), so ``import nams_local`` is instant and
``import backends.hosted`` (which needs only the types) loads only the handful of modules it
uses. The ``TYPE_CHECKING`` block below is the same list for mypy and IDEs; the two are
kept equal by ``tests/test_layers.py``. Concrete backends live in the top-level
``backends`` package (``backends.sqlite.SQLiteBackend``) so that this package never
depends on them; ``nams_local.config`` is the one module that opens them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .__version__ import __version__

if TYPE_CHECKING:
    from .backend import (
        DEFAULT_LIST_LIMIT,
        DEFAULT_SEARCH_LIMIT,
        MAX_BULK_MESSAGES,
        MAX_LIST_LIMIT,
        Capabilities,
        MemoryBackend,
    )
    from .config import (
        backend_kind,
        create_nams,
        create_nams_provider,
        default_db_path,
        open_backend,
        open_hosted_backend,
        open_local_backend,
        wrap_openai,
    )
    from .embeddings import (
        Embedder,
        EmbedderUnavailableError,
        HashingEmbedder,
        MiniLMEmbedder,
        SentenceTransformerEmbedder,
        default_embedder,
    )
    from .errors import (
        AuthenticationError,
        BackendUnavailableError,
        InvalidInputError,
        NamsError,
        NotFoundError,
        NotSupportedError,
    )
    from .extraction import (
        RuleExtractor,
    )
    from .integrations import (
        ChatModel,
        ChatResponse,
        EnsureStoredResult,
        ExtractionOptions,
        FallbackInput,
        HookEntry,
        HookGroup,
        HookInput,
        HookOutput,
        HooksConfig,
        LLMExtractor,
        LLMSummariser,
        LoopEvent,
        LoopResult,
        McpConfig,
        McpStatus,
        MemoryChatModel,
        MemoryConfig,
        MemoryToolSet,
        Nams,
        NamsHooks,
        NamsMcpConnectionError,
        NamsProvider,
        OpenAIChatModel,
        PreparedTurn,
        ScriptedChatModel,
        ScriptedReply,
        StepOverrides,
        StepResult,
        StoreInput,
        StreamChunk,
        SyncChatModel,
        Tool,
        ToolCallRequest,
        ToolLoop,
        ToolResult,
        ToolSet,
        ToolsWithMcp,
        build_memory_tools,
        compile_hooks,
        current_tool_call_id,
        enforce_query_memory,
        ensure_memory_stored,
        named_tool,
    )
    from .log import (
        MemoryLogger,
        StdlibMemoryLogger,
    )
    from .memory_block import (
        format_memory_block,
        inject_memory_block,
    )
    from .models import (
        Context,
        Conversation,
        ConversationSearchHits,
        ConversationTrace,
        Entity,
        EntityDetails,
        EntityGraph,
        EntityHistory,
        EntityMention,
        EntityProvenance,
        EntityRelationship,
        ExtractionStatus,
        ExtractionUnit,
        FeedbackResult,
        GraphEdge,
        GraphNode,
        InfluencedEntity,
        MergeResult,
        Message,
        NewMessage,
        Observation,
        QueryResult,
        ReasoningStep,
        Reflection,
        Relationship,
        SearchMode,
        SearchResult,
        StepExplanation,
        ToolCall,
        ToolCallStatus,
    )
    from .persistence import (
        ConversationResolver,
    )
    from .retrieval import (
        MemoryHit,
        RetrievalOptions,
        retrieve_memories,
    )
    from .scope import (
        Scope,
    )
    from .settings import (
        DEFAULT_ENDPOINT,
    )

#: Where each public name lives: module (relative to this package) -> its names.
_EXPORTS: dict[str, str] = {
    "backend": (
        "Capabilities DEFAULT_LIST_LIMIT DEFAULT_SEARCH_LIMIT MAX_BULK_MESSAGES "
        "MAX_LIST_LIMIT MemoryBackend"
    ),
    "errors": (
        "AuthenticationError BackendUnavailableError InvalidInputError NamsError "
        "NotFoundError NotSupportedError"
    ),
    "models": (
        "Context Conversation ConversationSearchHits ConversationTrace Entity EntityDetails "
        "EntityGraph EntityHistory EntityMention EntityProvenance EntityRelationship "
        "ExtractionStatus ExtractionUnit FeedbackResult GraphEdge GraphNode InfluencedEntity "
        "MergeResult Message NewMessage Observation QueryResult ReasoningStep Reflection "
        "Relationship SearchMode SearchResult StepExplanation ToolCall ToolCallStatus"
    ),
    "scope": "Scope",
    "log": "MemoryLogger StdlibMemoryLogger",
    "settings": "DEFAULT_ENDPOINT",
    "embeddings": (
        "Embedder EmbedderUnavailableError HashingEmbedder MiniLMEmbedder "
        "SentenceTransformerEmbedder default_embedder"
    ),
    "extraction": "RuleExtractor",
    "retrieval": "MemoryHit RetrievalOptions retrieve_memories",
    "memory_block": "format_memory_block inject_memory_block",
    "persistence": "ConversationResolver",
    "integrations": (
        "ChatModel ChatResponse EnsureStoredResult ExtractionOptions FallbackInput HookEntry "
        "HookGroup HookInput HookOutput HooksConfig LLMExtractor LLMSummariser LoopEvent "
        "LoopResult McpConfig McpStatus MemoryChatModel MemoryConfig MemoryToolSet Nams "
        "NamsHooks NamsMcpConnectionError NamsProvider OpenAIChatModel PreparedTurn "
        "ScriptedChatModel ScriptedReply StepOverrides StepResult StoreInput StreamChunk "
        "SyncChatModel Tool ToolCallRequest ToolLoop ToolResult ToolSet ToolsWithMcp "
        "build_memory_tools compile_hooks current_tool_call_id enforce_query_memory "
        "ensure_memory_stored named_tool"
    ),
    "config": (
        "backend_kind create_nams create_nams_provider default_db_path open_backend "
        "open_hosted_backend open_local_backend wrap_openai"
    ),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names.split()}

__all__ = [
    "DEFAULT_ENDPOINT",
    "DEFAULT_LIST_LIMIT",
    "DEFAULT_SEARCH_LIMIT",
    "MAX_BULK_MESSAGES",
    "MAX_LIST_LIMIT",
    "AuthenticationError",
    "BackendUnavailableError",
    "Capabilities",
    "ChatModel",
    "ChatResponse",
    "Context",
    "Conversation",
    "ConversationResolver",
    "ConversationSearchHits",
    "ConversationTrace",
    "Embedder",
    "EmbedderUnavailableError",
    "EnsureStoredResult",
    "Entity",
    "EntityDetails",
    "EntityGraph",
    "EntityHistory",
    "EntityMention",
    "EntityProvenance",
    "EntityRelationship",
    "ExtractionOptions",
    "ExtractionStatus",
    "ExtractionUnit",
    "FallbackInput",
    "FeedbackResult",
    "GraphEdge",
    "GraphNode",
    "HashingEmbedder",
    "HookEntry",
    "HookGroup",
    "HookInput",
    "HookOutput",
    "HooksConfig",
    "InfluencedEntity",
    "InvalidInputError",
    "LLMExtractor",
    "LLMSummariser",
    "LoopEvent",
    "LoopResult",
    "McpConfig",
    "McpStatus",
    "MemoryBackend",
    "MemoryChatModel",
    "MemoryConfig",
    "MemoryHit",
    "MemoryLogger",
    "MemoryToolSet",
    "MergeResult",
    "Message",
    "MiniLMEmbedder",
    "Nams",
    "NamsError",
    "NamsHooks",
    "NamsMcpConnectionError",
    "NamsProvider",
    "NewMessage",
    "NotFoundError",
    "NotSupportedError",
    "Observation",
    "OpenAIChatModel",
    "PreparedTurn",
    "QueryResult",
    "ReasoningStep",
    "Reflection",
    "Relationship",
    "RetrievalOptions",
    "RuleExtractor",
    "Scope",
    "ScriptedChatModel",
    "ScriptedReply",
    "SearchMode",
    "SearchResult",
    "SentenceTransformerEmbedder",
    "StdlibMemoryLogger",
    "StepExplanation",
    "StepOverrides",
    "StepResult",
    "StoreInput",
    "StreamChunk",
    "SyncChatModel",
    "Tool",
    "ToolCall",
    "ToolCallRequest",
    "ToolCallStatus",
    "ToolLoop",
    "ToolResult",
    "ToolSet",
    "ToolsWithMcp",
    "__version__",
    "backend_kind",
    "build_memory_tools",
    "compile_hooks",
    "create_nams",
    "create_nams_provider",
    "current_tool_call_id",
    "default_db_path",
    "default_embedder",
    "enforce_query_memory",
    "ensure_memory_stored",
    "format_memory_block",
    "inject_memory_block",
    "named_tool",
    "open_backend",
    "open_hosted_backend",
    "open_local_backend",
    "retrieve_memories",
    "wrap_openai",
]


if not TYPE_CHECKING:  # hidden from mypy, so a misspelt name is still a type error

    def __getattr__(name: str) -> Any:
        """Import ``name`` from its module on first use and keep it (PEP 562)."""
        module = _MODULE_OF.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{module}", __name__), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
