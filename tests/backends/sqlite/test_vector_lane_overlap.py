"""The vector lane embeds its next batch while the writer stores the previous one.

Storing a batch's vectors is a unit of work on the writer every workspace shares, so it
waits for the group in progress; the lane used to wait with it, and the model idled. Here
the writer is held while the first batch's vectors are stored: the second batch must be
embedded meanwhile, and both still be found by a vector search once they have committed
(read-your-writes for vector search is unchanged).
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from backends.sqlite import SQLiteBackend
from nams_local.embeddings import HashingEmbedder, Matrix


class HeldFirst(HashingEmbedder):
    """The first run (the ``alpha`` message) waits for ``gate``; a run holding the
    ``beta`` message sets ``second``."""

    def __init__(self) -> None:
        super().__init__(dimension=64)
        self.gate = threading.Event()
        self.held = threading.Event()
        self.second = threading.Event()

    def _embed(self, texts: list[str]) -> Matrix:
        if any("alpha" in text for text in texts) and not self.held.is_set():
            self.held.set()
            assert self.gate.wait(30), "the test never opened the gate"
        if any("beta" in text for text in texts):
            self.second.set()
        return super()._embed(texts)


async def test_the_next_batch_is_embedded_while_the_last_is_stored(tmp_path: Path) -> None:
    embedder = HeldFirst()
    async with SQLiteBackend(tmp_path / "lane.db", embedder=embedder, extraction="off") as memory:
        conversation = await memory.create_conversation("u")
        await memory.add_message(conversation.id, "user", "alpha: the first message")
        assert await asyncio.to_thread(embedder.held.wait, 10)
        await memory.add_message(conversation.id, "user", "beta: the second message")
        busy, free = threading.Event(), threading.Event()

        def hold() -> None:
            busy.set()
            assert free.wait(30), "the test never freed the writer"

        held = memory.store.queue_unit(1, hold)
        try:
            assert await asyncio.to_thread(busy.wait, 10)
            embedder.gate.set()  # alpha's vectors now wait for the held writer
            assert await asyncio.to_thread(embedder.second.wait, 10), (
                "the lane waited for the writer instead of embedding the next batch"
            )
        finally:
            embedder.gate.set()
            free.set()
        await asyncio.wrap_future(held)
        found = await memory.search_messages(conversation.id, "second message", mode="vector")
        assert {m.content for m in found.items} == {
            "alpha: the first message",
            "beta: the second message",
        }
