"""Memory for one agent-framework run: recall once when it starts, persist once when it ends.

Agent frameworks (LangChain ``create_agent``, pydantic-ai, the OpenAI Agents SDK) call the
model several times per run (tool calls, retries, structured output). Middleware mode
(``middleware.MemoryMiddleware``) works per model step; an adapter instead wants the
*run*: one retrieval for the user's message, one memory block the framework puts in the
run's instructions, and one stored turn (the user's text, then the final answer) at the
end. ``RunMemory`` is that, built on the same core (conversation ladder, five-source
retrieval, memory block, persistence, the two tools), so every framework adapter shares
one set of rules and one failure policy: any memory failure is one logged warning and
the run goes on without memory.

The framework adapters put the block in the run's instructions (system message), not in
front of the user message as the chat-model modes do, because the frameworks keep the
user message in their own history: a block inside it would be stored and re-sent on
every later turn.
"""

from __future__ import annotations

from typing import Any

from ..backend import MemoryBackend
from ..memory_block import format_memory_block
from ..scope import Scope, as_scope
from .middleware import MemoryConfig, MemoryMiddleware, Turn
from .nams import create_nams
from .tools import MemoryToolSet

__all__ = ["RunMemory", "with_block"]


def with_block(instructions: str | None, block: str) -> str | None:
    """``instructions`` followed by the memory block (either may be empty)."""
    parts = [p for p in (instructions, block) if p]
    return "\n\n".join(parts) if parts else instructions


class RunMemory:
    """One user's memory, as a framework adapter uses it.

    Args:
        backend: any ``MemoryBackend`` (the caller owns it).
        user_id: whose memory; ``conversation_id`` pins the conversation turns are stored
            in (default: the user's latest, or a new one: the conversation ladder).
        config: the options of ``create_nams`` (``max_memories``, ``persist_interactions``,
            ``lookup_timeout``, ``logger``, ...).
    """

    def __init__(
        self,
        backend: MemoryBackend,
        *,
        user_id: str,
        conversation_id: str | None = None,
        **config: Any,
    ) -> None:
        self.nams = create_nams(backend, **config)
        self.scope: Scope = as_scope({"user_id": user_id, "conversation_id": conversation_id})
        self.middleware: MemoryMiddleware = self.nams.middleware(self.scope)

    @property
    def backend(self) -> MemoryBackend:
        return self.nams.backend

    @property
    def config(self) -> MemoryConfig:
        return self.nams.config

    async def recall(self, user_text: str) -> Turn:
        """Retrieve for ``user_text`` (once per run); never raises."""
        return await self.middleware.prepare([{"role": "user", "content": user_text}])

    @staticmethod
    def block(turn: Turn) -> str:
        """The memory block of ``turn`` (``""`` when nothing was recalled), less any hit
        that is the run's own prompt: a framework may store the prompt before the first
        model call (the Agents SDK's session does), and the model has it already."""
        asked = turn.user_text.strip()
        return format_memory_block([h for h in turn.memories if h.content.strip() != asked])

    async def remember(self, turn: Turn, answer: str) -> None:
        """Store the run: the user's text, then ``answer``; never raises."""
        await self.middleware.finish(turn, answer.strip())

    def tools(self) -> MemoryToolSet:
        """``query_memory`` and ``store_memory`` for this user (their own memory client)."""
        return self.nams.tools(self.scope)
