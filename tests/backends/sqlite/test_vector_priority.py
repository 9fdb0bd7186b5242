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
from backends.sqlite.vector_lane import BATCH, BATCH_COST, conversation_key, model_chars
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


async def test_a_waiting_write_does_not_wait_behind_another_workspaces_bulk(
    tmp_path: Path,
) -> None:
    """With vectors stored before the ack (``serve``'s default) every write waits for its
    rows; a tenant's bulks of long messages must not fill the batches ahead of another
    tenant's single message: waited rows are taken in turn per workspace, and a batch holds
    a bounded amount of text."""
    embedder = HeldFirstBulk()
    path = tmp_path / "fair.sqlite3"
    async with SQLiteBackend(
        path, embedder=embedder, extraction="off", vectors_before_ack=True
    ) as root:
        hostile, calm = root.for_workspace("hostile"), root.for_workspace("calm")
        try:
            loud = await hostile.create_conversation("h")
            quiet = await calm.create_conversation("c")
            filler = "long words " * 150  # read by the model to its limit
            bulks = [
                asyncio.create_task(
                    hostile.add_messages(
                        loud.id,
                        [
                            NewMessage(role="user", content=f"bulk {n} {i} {filler}")
                            for i in range(100)
                        ],
                    )
                )
                for n in range(2)
            ]
            assert await asyncio.to_thread(embedder.held.wait, 30)
            lane = root.store.vector_lane
            assert lane is not None
            while lane.backlog < 200:  # both bulks committed and queued
                await asyncio.sleep(0.01)
            mine = asyncio.create_task(calm.add_message(quiet.id, "user", "sailing on Saturday"))
            while not lane.has_pending([conversation_key(quiet.id)]):
                await asyncio.sleep(0.01)
            for _ in range(3):  # the write registers what it waits for, then suspends
                await asyncio.sleep(0)
            embedder.gate.set()
            await asyncio.wait_for(mine, 60)
            before = 0  # bulk rows embedded before (or with) the calm tenant's row
            for run in embedder.runs:
                before += sum(t.startswith("bulk ") for t in run)
                if "sailing on Saturday" in run:
                    break
            # The batch already in the model, then the one that took the calm row in turn.
            assert before <= 2 * (BATCH_COST // model_chars(filler) + 1), before
            await asyncio.wait_for(asyncio.gather(*bulks), 120)
        finally:
            embedder.gate.set()
            await calm.aclose()
            await hostile.aclose()
