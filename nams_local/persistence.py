"""Persistence rules: which conversation a turn belongs to, and what a step writes.

Reproduces provider-behavior §2 and §4. Deliberate differences: a failed conversation
resolution is not remembered, so the next turn tries again instead of failing forever;
every call has a timeout; the two write failures are logged as warnings (the TS
provider uses error level) because memory failures in the request path are warnings here;
and on a backend that ``SupportsTurns`` (the local engine) a step's user and assistant
messages are written as one unit (``persist_turn``: one transaction, one commit, one
wait), which halves what persistence costs the caller. Durability is the same: it returns
once both are committed. If that unit is refused as invalid (nothing was written), the two
messages are written one by one as before, so a valid one is kept and the invalid one gets
its own warning.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from .backend import MemoryBackend, SupportsTurns
from .errors import InvalidInputError
from .log import MemoryLogger
from .memory_block import last_user_index
from .models import Conversation, Message, NewMessage
from .retrieval import DEFAULT_LOOKUP_TIMEOUT
from .scope import Scope

__all__ = ["ConversationResolver", "continues_turn", "persist_step"]


def continues_turn(messages: Sequence[Mapping[str, Any]]) -> bool:
    """A step continues the turn when a ``tool`` message follows the last user message."""
    index = last_user_index(messages)
    start = 0 if index is None else index + 1
    return any(m.get("role") == "tool" for m in messages[start:])


class ConversationResolver:
    """The conversation ladder (§2.1), memoised per instance.

    explicit id → this instance's cache → the user's latest conversation → a new one.
    Concurrent callers share one resolution; a failed one is forgotten (retried next time).
    """

    def __init__(
        self,
        backend: MemoryBackend,
        logger: MemoryLogger,
        workspace: str | None = None,
        timeout: float = DEFAULT_LOOKUP_TIMEOUT,
    ) -> None:
        self.backend = backend
        self.logger = logger
        self.workspace = workspace
        self.timeout = timeout
        self._cache: dict[str, str] = {}
        self._pending: dict[str, asyncio.Task[str]] = {}

    def _key(self, scope: Scope) -> str:
        return f"{self.workspace or 'default'}:{scope.user_id}"

    async def resolve(self, scope: Scope) -> str:
        key = self._key(scope)
        if scope.conversation_id:
            self._cache[key] = scope.conversation_id
            return scope.conversation_id
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        task = self._pending.get(key)
        if task is None:
            task = asyncio.ensure_future(self._climb(scope))
            self._pending[key] = task
        try:
            conversation_id = await asyncio.shield(task)
        finally:
            if task.done():
                self._pending.pop(key, None)
        self._cache[key] = conversation_id
        return conversation_id

    async def find_existing(self, scope: Scope) -> str | None:
        """The same ladder without creating (§2.2): ``None`` when there is none or on error."""
        key = self._key(scope)
        if scope.conversation_id:
            self._cache[key] = scope.conversation_id
            return scope.conversation_id
        if key in self._cache:
            return self._cache[key]
        try:
            found = await self._latest(scope)
        except Exception:
            return None
        if found is not None:
            self._cache[key] = found
        return found

    async def _latest(self, scope: Scope) -> str | None:
        """The id of the user's most recent conversation (``TypeError`` on garbage)."""
        found = await asyncio.wait_for(
            self.backend.list_conversations(user_id=scope.user_id, limit=1), self.timeout
        )
        if not isinstance(found, list) or not all(isinstance(c, Conversation) for c in found):
            raise TypeError(f"backend returned {type(found).__name__}, not conversations")
        return found[0].id if found else None

    async def _climb(self, scope: Scope) -> str:
        try:
            found = await self._latest(scope)
        except Exception as exc:
            self.logger.warn("listConversations failed, creating new conversation", exc)
        else:
            if found is not None:
                return found
        created = await asyncio.wait_for(
            self.backend.create_conversation(user_id=scope.user_id), self.timeout
        )
        if not isinstance(created, Conversation):
            raise TypeError(f"backend returned {type(created).__name__}, not a conversation")
        return created.id


async def persist_step(
    backend: MemoryBackend,
    conversation_id: str,
    *,
    user_text: str | None,
    assistant_text: str,
    logger: MemoryLogger,
    timeout: float = DEFAULT_LOOKUP_TIMEOUT,
) -> None:
    """Write the step's user message (first step of a turn only) then its assistant text.

    Sequential and awaited; failures (errors, timeouts, a reply that is not the stored
    message) become one warning each and never propagate.
    """
    writes = [
        (role, text, failure)
        for role, text, failure in (
            ("user", user_text, "persist user message failed"),
            ("assistant", assistant_text, "persist assistant message failed"),
        )
        if text
    ]
    turns = backend if len(writes) > 1 and isinstance(backend, SupportsTurns) else None
    if turns is not None and await _persist_together(
        turns, conversation_id, writes, logger, timeout
    ):
        return
    for role, text, failure in writes:
        try:
            stored = await asyncio.wait_for(
                backend.add_message(conversation_id, role, text), timeout
            )
            if not isinstance(stored, Message):
                raise TypeError(f"backend returned {type(stored).__name__}, not a message")
        except Exception as exc:
            logger.warn(failure, exc)


async def _persist_together(
    backend: SupportsTurns,
    conversation_id: str,
    writes: Sequence[tuple[str, str, str]],
    logger: MemoryLogger,
    timeout: float,
) -> bool:
    """Both messages in one unit; ``False`` when it was refused as invalid (nothing was
    written: the caller writes them one by one). Any other failure is logged once for the
    step and counts as done: the unit may still commit, so writing again could store the
    turn twice."""
    new = [NewMessage(role=role, content=text) for role, text, _ in writes]
    try:
        stored = await asyncio.wait_for(backend.persist_turn(conversation_id, new), timeout)
        if not isinstance(stored, list) or not all(isinstance(m, Message) for m in stored):
            raise TypeError(f"backend returned {type(stored).__name__}, not messages")
    except InvalidInputError:
        return False
    except Exception as exc:
        logger.warn("persist turn failed", exc)
    return True
