"""A vector search's own scope is embedded before a backlog nobody is waiting for.

The vector lane embeds committed messages in batches after their ack; a search waits for
the rows queued in its own scope. Those rows must not wait behind another scope's bulk
ingest: the lane takes rows a search waits for first.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from backends.sqlite import SQLiteBackend
from backends.sqlite.vector_lane import BATCH
from nams_local import NewMessage
from nams_local.embeddings import HashingEmbedder, Matrix


class HeldFirstBulk(HashingEmbedder):
    """Records every run's texts; the first run of bulk rows waits for ``gate``."""

    def __init__(self) -> None:
        super().__init__(dimension=64)
        self.gate = threading.Event()
        self.held = threading.Event()
        self.runs: list[list[str]] = []
        self._lock = threading.Lock()

    def _embed(self, texts: list[str]) -> Matrix:
        with self._lock:
            self.runs.append(list(texts))
            first = not self.held.is_set() and any(t.startswith("bulk ") for t in texts)
            if first:
                self.held.set()
        if first:
            assert self.gate.wait(30), "the test never opened the gate"
        return super()._embed(texts)


async def test_a_search_does_not_wait_behind_another_scopes_backlog(tmp_path: Path) -> None:
    embedder = HeldFirstBulk()
    async with SQLiteBackend(tmp_path / "m.sqlite3", embedder=embedder, extraction="off") as b:
        try:
            bulk = await b.create_conversation("u1")
            mine = await b.create_conversation("u2")
            for n in range(5):  # 500 rows in another user's conversation, all acked
                await b.add_messages(
                    bulk.id,
                    [NewMessage(role="user", content=f"bulk {n} {i}") for i in range(100)],
                )
            assert await asyncio.to_thread(embedder.held.wait, 30)
            own = await b.add_message(mine.id, "user", "sailing lessons on Saturday")
            search = asyncio.create_task(
                b.search_messages(mine.id, "sailing lessons", mode="vector", limit=1)
            )
            for _ in range(3):  # the search registers what it waits for, then suspends
                await asyncio.sleep(0)
            assert not search.done()
            embedder.gate.set()
            found = await asyncio.wait_for(search, 30)
            assert [m.id for m in found.items] == [own.id]
            before = 0  # bulk rows embedded before (or with) this scope's row
            for run in embedder.runs:
                before += sum(t.startswith("bulk ") for t in run)
                if "sailing lessons on Saturday" in run:
                    break
            # The batch already in the model, then this scope's batch (FIFO: all 500).
            assert before <= 2 * BATCH, before
        finally:
            embedder.gate.set()
