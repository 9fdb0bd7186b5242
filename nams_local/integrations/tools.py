"""Tools mode: memory the model can see — ``query_memory`` and ``store_memory``.

``build_memory_tools(backend, config, scope)`` (what ``Nams.tools(scope)`` returns) gives a
:class:`MemoryToolSet`: a ``ToolSet`` dict bound to its own memory client (conversation,
logger, optional graph extractor). The binding is kept in a registry keyed by the set's
identity, so ``ensure_memory_stored`` can refuse a copy (``{**tools}``, ``dict(tools)``):
a copy has lost the client, and storing through another one would silently split state.

Return shapes, names, descriptions and schemas are the TS provider's (§5.1–§5.2). One
improvement: ``tags`` are kept as entity properties instead of being dropped
(see :func:`~nams_local.integrations.entity_writes.tag_properties`).
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any

from ..backend import MemoryBackend
from ..persistence import ConversationResolver
from ..retrieval import RetrievalOptions, retrieve_memories
from ..scope import ScopeLike, as_scope
from .chat import ChatModel
from .graph_extraction import ExtractionOptions, GraphExtractor, as_extraction_options
from .memory_store import MemoryToolContext
from .memory_tools import (
    PREVIEW_LENGTH,
    QUERY_MEMORY,
    QUERY_MEMORY_DESCRIPTION,
    STORE_MEMORY,
    STORE_MEMORY_DESCRIPTION,
    QueryMemoryArgs,
    StoreMemoryArgs,
    js_number,
    tool_schema,
)
from .middleware import MemoryConfig
from .tool import Tool

__all__ = [
    "MemoryToolSet",
    "build_memory_tools",
    "memory_tool_context",
    "register_memory_tools",
]


class MemoryToolSet(dict[str, Tool]):
    """A ``ToolSet`` bound to a memory client; see :func:`memory_tool_context`.

    A plain ``dict`` subclass (so it is weak-referenceable); copies of it are plain dicts
    with no binding.
    """


_REGISTRY: dict[int, tuple[weakref.ref[MemoryToolSet], MemoryToolContext]] = {}


def register_memory_tools(tools: MemoryToolSet, context: MemoryToolContext) -> None:
    """Bind ``tools`` (by identity) to ``context``; e.g. a memory + MCP merged set."""
    key = id(tools)
    _REGISTRY[key] = (weakref.ref(tools), context)
    weakref.finalize(tools, _REGISTRY.pop, key, None)


def memory_tool_context(tools: object) -> MemoryToolContext | None:
    """The memory client ``tools`` was registered with, or None (a copy, or never bound)."""
    entry = _REGISTRY.get(id(tools))
    if entry is None or entry[0]() is not tools:
        return None
    return entry[1]


def _query_tool(context: MemoryToolContext, config: MemoryConfig) -> Tool:
    options = RetrievalOptions(
        cross_session_limit=config.cross_session_limit,
        graph_expansion_limit=config.graph_expansion_limit,
        lookup_timeout=config.lookup_timeout,
        relevance_floor=config.relevance_floor,
        relevance_gate=config.relevance_gate,
        reranker=config.reranker,
        logger=context.logger,
    )

    async def query_memory(arguments: dict[str, Any]) -> dict[str, Any]:
        args = QueryMemoryArgs.model_validate(arguments)
        try:
            hits = await retrieve_memories(
                context.backend,
                context.scope,
                await context.conversation_id(),
                args.query,
                limit=args.limit,
                options=options,
            )
        except Exception as exc:
            context.logger.error("query_memory failed", exc)
            return {"found": False, "message": "Memory lookup failed.", "memories": []}
        if not hits:
            return {"found": False, "message": "No relevant memories found.", "memories": []}
        return {"found": True, "count": len(hits), "memories": [h.as_dict() for h in hits]}

    return Tool(QUERY_MEMORY, QUERY_MEMORY_DESCRIPTION, tool_schema(QueryMemoryArgs), query_memory)


def _store_tool(context: MemoryToolContext) -> Tool:
    async def store_memory(arguments: dict[str, Any]) -> dict[str, Any]:
        args = StoreMemoryArgs.model_validate(arguments)
        shape = {"type": args.type, "preview": args.content[:PREVIEW_LENGTH]}
        try:
            await context.store(args.content, args.type, args.confidence, args.tags)
        except Exception as exc:
            context.logger.error("store_memory failed", exc)
            return {"stored": False, **shape, "message": "Failed to store memory."}
        message = f"Memory stored ({args.type}, confidence={js_number(args.confidence)})"
        return {"stored": True, **shape, "message": message}

    return Tool(STORE_MEMORY, STORE_MEMORY_DESCRIPTION, tool_schema(StoreMemoryArgs), store_memory)


def build_memory_tools(
    backend: MemoryBackend,
    config: MemoryConfig,
    scope: ScopeLike,
    *,
    extraction_model: ChatModel | None = None,
    extraction_options: ExtractionOptions | Mapping[str, Any] | None = None,
) -> MemoryToolSet:
    """``{"query_memory": ..., "store_memory": ...}`` with a fresh memory client.

    Each call has its own conversation cache and one-shot log flags, like each
    ``tools()`` call in the TS provider. Validation errors in a model's arguments raise
    from ``execute`` (a tool loop turns them into error results); everything after
    validation answers with the provider's failure shapes instead of raising.
    """
    logger = config.logger
    extractor = (
        GraphExtractor(extraction_model, backend, logger, as_extraction_options(extraction_options))
        if extraction_model is not None
        else None
    )
    context = MemoryToolContext(
        backend=backend,
        scope=as_scope(scope),
        resolver=ConversationResolver(backend, logger, config.workspace_id, config.lookup_timeout),
        logger=logger,
        extractor=extractor,
    )
    tools = MemoryToolSet(
        {QUERY_MEMORY: _query_tool(context, config), STORE_MEMORY: _store_tool(context)}
    )
    register_memory_tools(tools, context)
    return tools
