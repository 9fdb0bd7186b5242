"""Search queries: a cached one costs no model run; new ones share the model's next run.

A store runs its embedder on one model thread (``embedding_batcher``). A query already in
the embedder's cache must not wait for that thread: the backend takes the cached vector on
the caller's side. New queries of concurrent searches, in any workspace, wait together and
are embedded in one run, with the message vectors queued at that moment.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path

from backends.sqlite import SQLiteBackend
from nams_local.embeddings import HashingEmbedder, Matrix, MiniLMEmbedder
from nams_local.models import Message, SearchResult

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


async def test_a_cached_query_is_answered_while_the_model_is_busy(tmp_path: Path) -> None:
    embedder = GatedEmbedder()
    root = SQLiteBackend(tmp_path / "m.sqlite3", embedder=embedder, extraction="off")
    views = [root.for_workspace(f"ws-{i}") for i in range(3)]
    blockers: list[asyncio.Task[object]] = []
    try:
        convs = []
        for view in views:
            conv = await view.create_conversation("u1")
            await view.add_message(conv.id, "user", "coffee in Lisbon with Ana")
            convs.append(conv.id)
        first = await views[0].search_messages(convs[0], "coffee Lisbon", mode="vector")
        assert [m.content for m in first.items] == ["coffee in Lisbon with Ana"]
        # The other workspaces' new queries hold the model thread, stuck in the model.
        blockers = [
            asyncio.create_task(view.search_messages(conv, f"{BLOCKING} {i}", mode="vector"))
            for i, (view, conv) in enumerate(zip(views[1:], convs[1:], strict=True))
        ]
        await _until(lambda: embedder.blocked == 1, 30, "the model to be busy")
        hits = embedder.query_cache_info().hits
        again = await asyncio.wait_for(
            views[0].search_messages(convs[0], "coffee Lisbon", mode="vector"), 10
        )
        assert [m.content for m in again.items] == ["coffee in Lisbon with Ana"]
        assert embedder.query_cache_info().hits == hits + 1
        assert not any(task.done() for task in blockers), "the model was not busy"
    finally:
        embedder.gate.set()
        await asyncio.gather(*blockers, return_exceptions=True)
        for view in views:
            await view.aclose()
        await root.aclose()


class CountingMiniLM(MiniLMEmbedder):
    """The real default model; counts its runs (the texts of each) and can hold one."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.blocked = 0
        self.runs: list[list[str]] = []
        self._lock = threading.Lock()

    def _embed(self, texts: list[str]) -> Matrix:
        with self._lock:
            self.runs.append(list(texts))
        if any(text.startswith(BLOCKING) for text in texts):
            with self._lock:
                self.blocked += 1
            self.gate.wait(30)
        return super()._embed(texts)


async def test_concurrent_new_queries_share_one_model_run(tmp_path: Path) -> None:
    """Eight workspaces each add a message and find it by vector search right after its
    ack; then, while the model is busy, each searches with a new query at the same time:
    the eight queries are embedded in one run of the real model, not eight."""
    n = 8
    embedder = CountingMiniLM()
    root = SQLiteBackend(tmp_path / "m.sqlite3", embedder=embedder, extraction="off")
    views = [root.for_workspace(f"ws-{i}") for i in range(n + 1)]
    topics = [
        ("We adopted a beagle puppy called Biscuit.", "what is my dog called"),
        ("I am flying to Hanoi for a conference on Monday.", "when is my trip to Vietnam"),
        ("My sister Olga plays the cello in an orchestra.", "which instrument does Olga play"),
        ("I switched to oat milk because of lactose.", "what milk do I drink"),
        ("Our team moved the launch to the third of March.", "when is the product launch"),
        ("I run ten kilometres every Sunday morning.", "how far do I run"),
        ("The plumber comes on Thursday to fix the boiler.", "who is fixing the heating"),
        ("I am allergic to peanuts and shellfish.", "what food allergies do I have"),
    ]
    tasks: list[asyncio.Task[SearchResult[Message]]] = []
    blocker: asyncio.Task[SearchResult[Message]] | None = None
    try:
        convs: list[str] = []
        messages = []
        for view, (content, _) in zip(views[:n], topics, strict=True):
            conv = await view.create_conversation("u1")
            convs.append(conv.id)
            messages.append(await view.add_message(conv.id, "user", content))
            found = await view.search_messages(conv.id, content, mode="vector")
            assert [m.id for m in found.items] == [messages[-1].id]  # right after its ack
        holder = await views[n].create_conversation("u0")
        blocker = asyncio.create_task(
            views[n].search_messages(holder.id, f"{BLOCKING} the model", mode="vector")
        )
        await _until(lambda: embedder.blocked == 1, 30, "the model to be busy")
        before = len(embedder.runs)
        misses = embedder.query_cache_info().misses
        tasks = [
            asyncio.create_task(view.search_messages(conv, q, mode="vector"))
            for view, conv, (_, q) in zip(views[:n], convs, topics, strict=True)
        ]
        await _until(lambda: embedder.query_cache_info().misses == misses + n, 30, "queries")
        embedder.gate.set()
        results = await asyncio.wait_for(asyncio.gather(*tasks), 60)
        for result, message in zip(results, messages, strict=True):
            assert [m.id for m in result.items] == [message.id]
        queries = {q for _, q in topics}
        runs = [texts for texts in embedder.runs[before:] if queries & set(texts)]
        assert [len(queries & set(texts)) for texts in runs] == [n], runs
    finally:
        embedder.gate.set()
        await asyncio.gather(*tasks, *([blocker] if blocker else []), return_exceptions=True)
        for view in views:
            await view.aclose()
        await root.aclose()
