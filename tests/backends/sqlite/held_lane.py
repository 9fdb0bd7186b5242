"""An embedder whose first bulk run is held: the vector lane's model thread stuck on a
backlog, so a test can act while acknowledged messages wait for their vectors."""

from __future__ import annotations

import asyncio
import threading

from backends.sqlite import SQLiteBackend
from nams_local import NewMessage
from nams_local.embeddings import BaseEmbedder, Matrix

__all__ = ["HeldBulk", "hold_the_lane"]


class HeldBulk(BaseEmbedder):
    """``inner``'s vectors; records every model run's texts; the first run holding a
    ``bulk `` text waits for ``gate`` (the lane's model thread stuck on a backlog)."""

    def __init__(self, inner: BaseEmbedder) -> None:
        super().__init__(query_cache_size=0)
        self.inner = inner
        self.gate = threading.Event()
        self.held = threading.Event()
        self.runs: list[list[str]] = []
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def _embed(self, texts: list[str]) -> Matrix:
        with self._lock:
            self.runs.append(list(texts))
            first = not self.held.is_set() and any(t.startswith("bulk ") for t in texts)
            if first:
                self.held.set()
        if first:
            assert self.gate.wait(60), "the test never opened the gate"
        return self.inner.embed(texts)

    def runs_with(self, text: str) -> list[list[str]]:
        with self._lock:
            return [run for run in self.runs if text in run]


async def hold_the_lane(backend: SQLiteBackend, embedder: HeldBulk, rows: int = 80) -> None:
    """Queue ``rows`` ``bulk`` messages in a conversation of their own and return once
    the lane's model thread is held on them."""
    backlog = await backend.create_conversation("backlog-user")
    await backend.add_messages(
        backlog.id,
        [NewMessage(role="user", content=f"bulk {i} harbour freight") for i in range(rows)],
    )
    assert await asyncio.to_thread(embedder.held.wait, 30)
