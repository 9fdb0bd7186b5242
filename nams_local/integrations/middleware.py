"""Middleware mode: memory around any chat model, invisible to the caller.

Before each model step: recall memories for the last user message and inject the memory
block (copy-on-write). After it: store the clean user text once per turn and the
assistant's final text. ``MemoryMiddleware`` holds that logic and the per-instance state
(conversation cache, per-turn memory cache); ``MemoryChatModel`` applies it to a
``ChatModel``, and ``wrap_openai`` to an OpenAI client, so the rules exist once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..backend import MemoryBackend
from ..log import MemoryLogger, default_logger
from ..memory_block import format_memory_block, inject_memory_block, query_text
from ..persistence import ConversationResolver, continues_turn, persist_step
from ..rerank import Reranker
from ..retrieval import (
    DEFAULT_CROSS_SESSION_LIMIT,
    DEFAULT_GRAPH_EXPANSION_LIMIT,
    DEFAULT_LOOKUP_TIMEOUT,
    DEFAULT_RELEVANCE_FLOOR,
    DEFAULT_RELEVANCE_GATE,
    MemoryHit,
    RetrievalOptions,
    retrieve_memories,
)
from ..scope import Scope
from .chat import ChatMessage, ChatModel, ChatResponse, StreamChunk

__all__ = ["MemoryChatModel", "MemoryConfig", "MemoryMiddleware", "Turn"]

DEFAULT_MAX_MEMORIES = 6


@dataclass(frozen=True, slots=True)
class MemoryConfig:
    """Settings shared by the transparent modes (names as in the TS ``NamsConfig``)."""

    max_memories: int = DEFAULT_MAX_MEMORIES
    persist_interactions: bool = True
    cross_session_limit: int = DEFAULT_CROSS_SESSION_LIMIT
    graph_expansion_limit: int = DEFAULT_GRAPH_EXPANSION_LIMIT
    lookup_timeout: float = DEFAULT_LOOKUP_TIMEOUT
    #: Memories scoring below this are left out (backends with comparable scores only).
    relevance_floor: float = DEFAULT_RELEVANCE_FLOOR
    #: A block opens only when its best memory scores at least this (same backends).
    relevance_gate: float = DEFAULT_RELEVANCE_GATE
    #: A local cross-encoder rescoring the memories (``nams_local.rerank``; off: None).
    reranker: Reranker | None = None
    workspace_id: str | None = None
    logger: MemoryLogger = field(default_factory=default_logger)


@dataclass(slots=True)
class Turn:
    """What ``prepare`` learned about a step, for ``finish``."""

    prompt: list[ChatMessage]
    user_text: str
    continues: bool
    memories: list[MemoryHit]


@dataclass(slots=True)
class _TurnCache:
    user_text: str
    memories: list[MemoryHit]


class MemoryMiddleware:
    """Retrieval before a step, persistence after it; never raises into the model call."""

    def __init__(self, backend: MemoryBackend, scope: Scope, config: MemoryConfig) -> None:
        self.backend = backend
        self.scope = scope
        self.config = config
        self.logger = config.logger
        self.resolver = ConversationResolver(
            backend, self.logger, config.workspace_id, config.lookup_timeout
        )
        self._cache: _TurnCache | None = None

    async def _conversation(self, failure: str) -> str | None:
        try:
            return await self.resolver.resolve(self.scope)
        except Exception as exc:
            self.logger.warn(failure, exc)
            return None

    async def prepare(self, messages: Sequence[ChatMessage]) -> Turn:
        """The prompt to send: the caller's messages with the memory block injected.

        A whitespace-only query gets no retrieval (the TS provider would send it and the
        backend would refuse it with a warning).
        """
        user_text = query_text(messages)
        continues = continues_turn(messages)
        memories: list[MemoryHit] = []
        if user_text.strip():
            cache = self._cache
            if continues and cache is not None and cache.user_text == user_text:
                memories = cache.memories
            else:
                conversation_id = await self._conversation("resolveConversation failed")
                if conversation_id is not None:
                    memories = await self._retrieve(conversation_id, user_text)
                    self._cache = _TurnCache(user_text, memories)
        injected = inject_memory_block(messages, format_memory_block(memories))
        prompt = injected if injected is not None else [dict(m) for m in messages]
        return Turn(prompt=prompt, user_text=user_text, continues=continues, memories=memories)

    async def _retrieve(self, conversation_id: str, query: str) -> list[MemoryHit]:
        options = RetrievalOptions(
            cross_session_limit=self.config.cross_session_limit,
            graph_expansion_limit=self.config.graph_expansion_limit,
            lookup_timeout=self.config.lookup_timeout,
            relevance_floor=self.config.relevance_floor,
            relevance_gate=self.config.relevance_gate,
            reranker=self.config.reranker,
            logger=self.logger,
        )
        try:
            return await retrieve_memories(
                self.backend,
                self.scope,
                conversation_id,
                query,
                limit=self.config.max_memories,
                options=options,
            )
        except Exception as exc:
            self.logger.warn("retrieve failed", exc)
            return []

    async def finish(self, turn: Turn, assistant_text: str) -> None:
        """Store the step: the clean user text on a turn's first step, then the answer."""
        if not self.config.persist_interactions:
            return
        user_text = "" if turn.continues else turn.user_text.strip()
        if not user_text and not assistant_text:
            return
        conversation_id = await self._conversation("persist failed")
        if conversation_id is None:
            return
        await persist_step(
            self.backend,
            conversation_id,
            user_text=user_text or None,
            assistant_text=assistant_text,
            logger=self.logger,
            timeout=self.config.lookup_timeout,
        )


def step_text(response: ChatResponse) -> str:
    """The assistant text a step persists: nothing when it hands off to app tools."""
    if response.tool_calls:
        return ""
    return response.text or ""


class MemoryChatModel:
    """A ``ChatModel`` with memory: same calls, same results, memories added."""

    def __init__(self, model: ChatModel, middleware: MemoryMiddleware) -> None:
        self.model = model
        self.middleware = middleware

    async def generate(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        tool_choice: Any = None,
        **options: Any,
    ) -> ChatResponse:
        turn = await self.middleware.prepare(messages)
        response = await self.model.generate(
            turn.prompt, tools=tools, tool_choice=tool_choice, **options
        )
        await self.middleware.finish(turn, step_text(response))
        return response

    async def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        tool_choice: Any = None,
        **options: Any,
    ) -> AsyncIterator[StreamChunk]:
        """Chunks pass through unchanged; persistence runs only if the stream completes."""
        turn = await self.middleware.prepare(messages)
        texts: list[str] = []
        handed_off = False
        async for chunk in self.model.stream(
            turn.prompt, tools=tools, tool_choice=tool_choice, **options
        ):
            if chunk.text:
                texts.append(chunk.text)
            if chunk.tool_call is not None:
                handed_off = True
            yield chunk
        await self.middleware.finish(turn, "" if handed_off else "".join(texts))
