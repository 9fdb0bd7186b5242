"""A search query the embedder has seen costs no embedding thread.

Query embedding is CPU work on the store's embedding lane, which batches of other work can
fill. A query already in the embedder's cache must not wait for that lane: the backend
takes the cached vector on the caller's side and goes to a thread only for a new query.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path

from backends.sqlite import SQLiteBackend
from nams_local.embeddings import HashingEmbedder, Matrix

#: A query starting with this blocks in the model until the test lets it go.
BLOCKING = "block"


class GatedEmbedder(HashingEmbedder):
    """Deterministic vectors; texts starting with ``BLOCKING`` wait for ``gate``."""

    def __init__(self) -> None:
        super().__init__(dimension=64)
        self.gate = threading.Event()
        self.blocked = 0
        self._lock = threading.Lock()

    def _embed(self, texts: list[str]) -> Matrix:
        if any(text.startswith(BLOCKING) for text in texts):
            with self._lock:
                self.blocked += 1
            self.gate.wait(30)
        return super()._embed(texts)


async def _until(condition: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


async def test_a_cached_query_is_answered_while_every_embedding_thread_is_busy(
    tmp_path: Path,
) -> None:
    embedder = GatedEmbedder()
    root = SQLiteBackend(tmp_path / "m.sqlite3", embedder=embedder, extraction="off")
    workers = root.store.lanes.embed.limits.workers
    # One workspace per embedding thread to hold (a workspace may hold only some), + ours.
    views = [root.for_workspace(f"ws-{i}") for i in range(workers + 1)]
    blockers: list[asyncio.Task[object]] = []
    try:
        convs = []
        for view in views:
            conv = await view.create_conversation("u1")
            await view.add_message(conv.id, "user", "coffee in Lisbon with Ana")
            convs.append(conv.id)
        first = await views[0].search_messages(convs[0], "coffee Lisbon", mode="vector")
        assert [m.content for m in first.items] == ["coffee in Lisbon with Ana"]
        # The other workspaces' new queries hold every embedding thread, stuck in the model.
        blockers = [
            asyncio.create_task(view.search_messages(conv, f"{BLOCKING} {i}", mode="vector"))
            for i, (view, conv) in enumerate(zip(views[1:], convs[1:], strict=True))
        ]
        await _until(lambda: embedder.blocked == workers, 30, "the lane to fill")
        hits = embedder.query_cache_info().hits
        again = await asyncio.wait_for(
            views[0].search_messages(convs[0], "coffee Lisbon", mode="vector"), 10
        )
        assert [m.content for m in again.items] == ["coffee in Lisbon with Ana"]
        assert embedder.query_cache_info().hits == hits + 1
        assert not any(task.done() for task in blockers), "the lane was not full"
    finally:
        embedder.gate.set()
        await asyncio.gather(*blockers, return_exceptions=True)
        for view in views:
            await view.aclose()
        await root.aclose()
