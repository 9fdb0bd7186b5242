"""What every framework adapter's tests share: two sessions of one user on the real engine,
and how to read back what a session stored.

Session one tells the agent a fact; session two (another conversation of the same user)
asks about it, so the fact can only reach the second run's model through cross-session
retrieval. ``stored`` lists a conversation's messages oldest first as ``(role, text)``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from backends.sqlite import SQLiteBackend

__all__ = ["FACT", "QUESTION", "Sessions", "sessions", "stored"]

USER = "alice"
FACT = "My favourite tea is oolong from Taiwan"
QUESTION = "Which tea do I like?"


@dataclass(frozen=True, slots=True)
class Sessions:
    backend: SQLiteBackend
    user_id: str
    first: str
    second: str


@asynccontextmanager
async def sessions() -> AsyncIterator[Sessions]:
    """The engine in memory (text search, no extraction) with two conversations of one user."""
    async with SQLiteBackend(":memory:", embeddings=False, extraction="off") as backend:
        first = await backend.create_conversation(USER)
        second = await backend.create_conversation(USER)
        yield Sessions(backend, USER, first.id, second.id)


async def stored(backend: SQLiteBackend, conversation_id: str) -> list[tuple[str, str]]:
    messages = await backend.list_messages(conversation_id)
    return [(m.role, m.content) for m in reversed(messages)]
