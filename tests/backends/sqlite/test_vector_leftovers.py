"""Vectors a previous process left queued are embedded in the background on open.

A first store's embedder fails, so its message stays in ``vector_queue`` (durable) after
the lane gives up. A second store opens the file with an embedder held at a gate: opening
returns while the gate is still shut (start-up does not wait for the model), and a vector
search in the message's conversation finds it once the gate opens — it waited for its own
scope's leftovers like for a fresh write.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from sqlalchemy import func, select

from backends.sqlite import SQLiteBackend
from backends.sqlite import schema as s
from nams_local import HashingEmbedder
from nams_local.embeddings import Matrix


class FailingEmbedder(HashingEmbedder):
    def embed(self, texts: Sequence[str]) -> Matrix:
        raise RuntimeError("the model is unavailable")


class GatedEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def embed(self, texts: Sequence[str]) -> Matrix:
        assert self.gate.wait(timeout=30), "the test never opened the gate"
        return super().embed(texts)


def _queued(backend: SQLiteBackend) -> int:
    store = backend.store
    return int(
        store.run_sync(
            lambda: store.conn.execute(
                select(func.count()).select_from(s.vector_queue)
            ).scalar_one()
        )
    )


async def test_leftover_vectors_do_not_block_open_and_are_searchable_after(
    tmp_path: Path,
) -> None:
    db = tmp_path / "leftovers.db"
    text = "the harbour master logged forty crates of saffron"
    async with SQLiteBackend(db, embedder=FailingEmbedder(), extraction="off") as first:
        conv = await first.create_conversation("u1")
        stored = await first.add_message(conv.id, "user", text)
        deadline = time.monotonic() + 30
        while first.store.vector_lane is not None and first.store.vector_lane.backlog:
            assert time.monotonic() < deadline, "the vector lane never gave up"
            await asyncio.sleep(0.01)
        assert _queued(first) == 1

    gated = GatedEmbedder()
    started = time.monotonic()
    second = SQLiteBackend(db, embedder=gated, extraction="off")
    try:
        assert not gated.gate.is_set()  # it opened without embedding the leftover
        assert time.monotonic() - started < 20
        assert second.store.vector_lane is not None
        assert second.store.vector_lane.backlog == 1
        gated.gate.set()
        found = await second.search_messages(conv.id, text, mode="vector", limit=1)
        assert [m.id for m in found.items] == [stored.id]
        assert _queued(second) == 0
    finally:
        gated.gate.set()
        await second.aclose()
