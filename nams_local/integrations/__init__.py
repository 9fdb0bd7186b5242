"""Memory for chat models: the chat interface, adapters and the memory modes."""

from .chat import ChatMessage, ChatModel, ChatResponse, StreamChunk, ToolCallRequest
from .graph_extraction import ExtractionOptions
from .guarantees import (
    EnsureStoredResult,
    FallbackInput,
    StoreInput,
    enforce_query_memory,
    ensure_memory_stored,
)
from .hooks import NamsHooks, PreparedTurn
from .lifecycle import (
    HookEntry,
    HookEvent,
    HookGroup,
    HookHandler,
    HookInput,
    HookOutput,
    HooksConfig,
    SessionTurn,
    compile_hooks,
)
from .llm_extraction import LLMExtractor, LLMSummariser
from .mcp_tools import (
    McpConfig,
    McpStatus,
    NamsMcpConnectionError,
    PendingTools,
    ToolsWithMcp,
    connect_mcp_tools,
)
from .middleware import MemoryChatModel, MemoryConfig, MemoryMiddleware
from .nams import Nams, NamsProvider, create_nams, create_nams_provider
from .openai_model import OpenAIChatModel
from .openai_wrap import wrap_openai
from .scripted import RecordedCall, ScriptedChatModel, ScriptedReply
from .sync import SyncChatModel
from .tool import Tool, ToolSet
from .tool_loop import (
    LoopEvent,
    LoopResult,
    StepOverrides,
    StepResult,
    ToolLoop,
    ToolResult,
    current_tool_call_id,
    named_tool,
)
from .tools import MemoryToolSet, build_memory_tools

__all__ = [
    "ChatMessage",
    "ChatModel",
    "ChatResponse",
    "EnsureStoredResult",
    "ExtractionOptions",
    "FallbackInput",
    "HookEntry",
    "HookEvent",
    "HookGroup",
    "HookHandler",
    "HookInput",
    "HookOutput",
    "HooksConfig",
    "LLMExtractor",
    "LLMSummariser",
    "LoopEvent",
    "LoopResult",
    "McpConfig",
    "McpStatus",
    "MemoryChatModel",
    "MemoryConfig",
    "MemoryMiddleware",
    "MemoryToolSet",
    "Nams",
    "NamsHooks",
    "NamsMcpConnectionError",
    "NamsProvider",
    "OpenAIChatModel",
    "PendingTools",
    "PreparedTurn",
    "RecordedCall",
    "ScriptedChatModel",
    "ScriptedReply",
    "SessionTurn",
    "StepOverrides",
    "StepResult",
    "StoreInput",
    "StreamChunk",
    "SyncChatModel",
    "Tool",
    "ToolCallRequest",
    "ToolLoop",
    "ToolResult",
    "ToolSet",
    "ToolsWithMcp",
    "build_memory_tools",
    "compile_hooks",
    "connect_mcp_tools",
    "create_nams",
    "create_nams_provider",
    "current_tool_call_id",
    "enforce_query_memory",
    "ensure_memory_stored",
    "named_tool",
    "wrap_openai",
]
