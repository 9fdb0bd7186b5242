"""Backend wrappers for the core tests.

The wrappers sit around the real SQLite engine. ``ContainsSearch`` gives it the search
semantics hosted NAMS documents for workspaces without embeddings (a literal, case-
sensitive substring match, no cross-conversation search), which is what the word
fallback exists for. ``Faulty`` makes chosen methods fail, hang or return garbage.

A wrapper hides the engine's one-call turn methods (``SupportsTurns``) unless it is built
with ``turns=True``: the tests that count or break single protocol calls are about the
provider's source-by-source path, which hosted NAMS gets (``test_turns.py`` covers the
one-call path and that both give the same hits).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from collections.abc import Awaitable
from typing import Any

from nams_local import Capabilities, Entity, Message, SearchResult

#: ``nams_local.backend.SupportsTurns``' methods.
TURN_METHODS = frozenset({"recall_turn", "persist_turn"})


class Wrapper:
    """Delegates every backend method to ``inner``; subclasses override some."""

    def __init__(self, inner: Any, *, turns: bool = False) -> None:
        self.inner = inner
        self.turns = turns
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        if name in TURN_METHODS and not self.__dict__.get("turns", False):
            raise AttributeError(name)
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr

        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return await attr(*args, **kwargs)

        return counted

    @property
    def capabilities(self) -> Capabilities:
        caps: Capabilities = self.inner.capabilities
        return caps


class ContainsSearch(Wrapper):
    """Hosted text-mode search: case-sensitive substring, one conversation at a time."""

    @property
    def capabilities(self) -> Capabilities:
        return dataclasses.replace(
            super().capabilities, user_message_search=False, vector_search=False
        )

    async def search_messages(
        self, conversation_id: str, query: str, limit: int = 10, mode: Any = None
    ) -> SearchResult[Message]:
        self.calls["search_messages"] += 1
        messages = await self.inner.list_messages(conversation_id, limit=200)
        items = [m for m in reversed(messages) if query in m.content][:limit]
        return SearchResult[Message](items=items, search_type="text")

    async def search_entities(
        self, query: str, type: str | None = None, limit: int = 10, mode: Any = None
    ) -> SearchResult[Entity]:
        self.calls["search_entities"] += 1
        entities = await self.inner.list_entities(type)
        items = [
            e for e in entities if query in e.name or (e.description and query in e.description)
        ][:limit]
        return SearchResult[Entity](items=items, search_type="text")


class Faulty(Wrapper):
    """Makes chosen methods raise, hang past any timeout, or answer garbage."""

    def __init__(self, inner: Any, faults: dict[str, str]) -> None:
        super().__init__(inner)
        self.faults = faults

    def __getattr__(self, name: str) -> Any:
        fault = self.faults.get(name)
        if fault is None:
            return super().__getattr__(name)

        async def fail() -> Any:
            if fault == "raise":
                raise ConnectionError(f"{name} exploded")
            if fault == "timeout":
                await asyncio.Event().wait()  # never set: only the caller's timeout ends it
            return {"garbage": True}

        def broken(*args: Any, **kwargs: Any) -> Awaitable[Any]:
            # Counted when called, not when the coroutine first runs: on a loaded machine
            # the caller's timeout can cancel it before it starts, and the call still
            # happened (and was logged as failed).
            self.calls[name] += 1
            return fail()

        return broken
