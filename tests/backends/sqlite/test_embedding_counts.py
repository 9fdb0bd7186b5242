"""What the store's model embeds, counted: every text once, known texts never again.

The model's price per text hardly falls with batch size on a busy 2-core box, so a text
embedded twice is CPU taken from the requests. These tests read the batcher's counters
(``embedding_stats``): an entity whose text did not change is not embedded again, the
same text in another workspace or a repeated message costs no model run, N queued texts
take one run, and a message whose vector came from the cache is still found by vector
search right after its write is acknowledged.
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from backends.sqlite import SQLiteBackend
from backends.sqlite.embedding_batcher import EmbeddingBatcher
from backends.sqlite.embedding_stats import ENTITIES, MESSAGES, QUERIES, TRACE_ENV
from backends.sqlite.text_vectors import ENTRIES_ENV, TextVectors
from nams_local.embeddings import HashingEmbedder, Matrix, MiniLMEmbedder

from .test_embedding_batcher import Gated

FIRST = "I moved to Melbourne with Priya last year and we joined Acme Robotics."
AGAIN = "Priya says Melbourne is cold in July, and Acme Robotics is hiring."


class Counting(HashingEmbedder):
    """Deterministic vectors; remembers every text the model ran on."""

    def __init__(self) -> None:
        super().__init__(dimension=64)
        self.seen: list[str] = []
        self._lock = threading.Lock()

    def _embed(self, texts: list[str]) -> Matrix:
        with self._lock:
            self.seen.extend(texts)
        return super()._embed(texts)


def _batcher(backend: SQLiteBackend) -> EmbeddingBatcher:
    vectors = backend.store.vectors
    assert vectors is not None
    return vectors.embedder


async def test_an_entity_whose_text_did_not_change_is_not_embedded_again(tmp_path: Path) -> None:
    embedder = Counting()
    backend = SQLiteBackend(tmp_path / "e.sqlite3", embedder=embedder, extraction="sync")
    try:
        conv = await backend.create_conversation("u1")
        await backend.add_message(conv.id, "user", FIRST)
        entities = {e.name for e in await backend.list_entities()}
        assert {"Melbourne", "Priya"} <= entities, entities
        stats = _batcher(backend).stats
        embedded = stats.embedded(ENTITIES)
        assert embedded >= 2
        await backend.add_message(conv.id, "user", AGAIN)
        await backend.add_message(conv.id, "user", FIRST)
        assert {e.name for e in await backend.list_entities()} >= entities
        assert stats.embedded(ENTITIES) == embedded + len(
            {e.name for e in await backend.list_entities()} - entities
        )
        # No entity text reached the model twice.
        names = [t for t in embedder.seen if t.split(".")[0] in entities]
        assert len(names) == len(set(names)), names
    finally:
        await backend.aclose()


async def test_the_same_texts_in_another_workspace_cost_no_model_run(tmp_path: Path) -> None:
    embedder = Counting()
    root = SQLiteBackend(tmp_path / "w.sqlite3", embedder=embedder, extraction="sync")
    views = [root.for_workspace(f"ws-{i}") for i in range(2)]
    try:
        found = []
        for view in views:
            conv = await view.create_conversation("u1")
            await view.add_message(conv.id, "user", FIRST)
            hits = await view.search_messages(conv.id, "Melbourne Priya", mode="vector")
            found.append([m.content for m in hits.items])
        assert found == [[FIRST], [FIRST]]  # read-your-writes, cached vector or not
        stats = _batcher(root).stats
        # The second workspace's message and entities came from what the first embedded.
        assert embedder.seen.count(FIRST) == 1
        assert stats.texts(MESSAGES) == 2 and stats.embedded(MESSAGES) == 1
        assert stats.texts(ENTITIES) == 2 * stats.embedded(ENTITIES) > 0
        assert len(embedder.seen) == len(set(embedder.seen)), embedder.seen
    finally:
        for view in views:
            await view.aclose()
        await root.aclose()


def test_a_text_that_is_not_a_string_is_refused_as_the_embedder_refuses_it() -> None:
    batcher = EmbeddingBatcher(Counting())
    try:
        with pytest.raises(TypeError, match=r"texts\[1\] is int"):
            batcher.embed(["fine", 3])  # type: ignore[list-item]
    finally:
        batcher.close()


def test_a_text_twice_in_one_call_is_embedded_once_in_the_callers_order() -> None:
    inner = Counting()
    batcher = EmbeddingBatcher(inner)
    try:
        texts = ["alpha beta", "gamma", "alpha beta", "delta epsilon", "gamma", "zeta"]
        out = batcher.embed(texts, "test")
        np.testing.assert_allclose(out, HashingEmbedder(dimension=64).embed(texts), atol=1e-6)
        assert sorted(inner.seen) == sorted(set(texts))
        again = batcher.embed(["zeta", "eta"], "test")
        np.testing.assert_allclose(again, HashingEmbedder(dimension=64).embed(["zeta", "eta"]))
        assert inner.seen.count("zeta") == 1 and "eta" in inner.seen
        stats = batcher.stats.snapshot()["callers"]["test"]
        assert (stats["calls"], stats["texts"], stats["cached"]) == (2, 8, 3)
    finally:
        batcher.close()


def test_texts_queued_while_the_model_is_busy_share_one_run() -> None:
    inner = Gated()
    batcher = EmbeddingBatcher(inner)
    n = 12
    with ThreadPoolExecutor(n + 1) as pool:
        try:
            stuck = pool.submit(batcher.embed, ["hold the query thread"])
            assert inner.holding.wait(30)
            small = [pool.submit(batcher.embed, [f"entity {i}"], ENTITIES) for i in range(n)]
            queries = [batcher.query(f"query {i}") for i in range(n)]
            deadline = time.monotonic() + 30
            while batcher.queued() < 2 * n and time.monotonic() < deadline:
                time.sleep(0.01)  # polling a condition, with a deadline
            assert batcher.queued() == 2 * n
        finally:
            inner.gate.set()
        assert stuck.result(timeout=30).shape == (1, 32)
        assert all(f.result(timeout=30).shape == (1, 32) for f in small)
        assert all(q.result(timeout=30).shape == (32,) for q in queries)
    runs_after_gate = inner.runs[1:]
    assert runs_after_gate == [2 * n], inner.runs  # one run for all 2n queued texts
    threads = batcher.stats.snapshot()["threads"]
    assert threads["query"]["runs"] == 2 and threads["query"]["queries"] == n
    assert batcher.stats.texts(QUERIES) == n
    batcher.close()


def test_the_minilm_embedder_counts_passes_and_real_and_padded_tokens() -> None:
    embedder = MiniLMEmbedder()
    before = embedder.thread_counts()
    embedder.embed(["a b c", "a"])  # [CLS] a b c [SEP] and [CLS] a [SEP]: one pass
    done = embedder.thread_counts().minus(before)
    assert (done.passes, done.texts, done.tokens, done.padded) == (1, 2, 8, 10)
    # Another thread's runs are its own.
    other = ThreadPoolExecutor(1)
    try:
        other.submit(embedder.embed, ["x y"]).result(timeout=60)
    finally:
        other.shutdown()
    assert embedder.thread_counts().minus(before).texts == 2


def test_the_trace_has_a_line_per_run_and_the_totals_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = tmp_path / "embed.jsonl"
    monkeypatch.setenv(TRACE_ENV, str(trace))
    batcher = EmbeddingBatcher(Counting())
    try:
        batcher.embed([f"message {i}" for i in range(10)], MESSAGES)
        batcher.embed(["message 3"], MESSAGES)  # cached: no run
    finally:
        batcher.close()
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    *runs, last = lines
    assert [run["callers"] for run in runs] == [{MESSAGES: 10}]
    assert last["totals"]["callers"][MESSAGES] == {
        "calls": 2,
        "texts": 11,
        "chars": sum(len(f"message {i}") for i in range(10)) + len("message 3"),
        "cached": 1,
    }


def test_the_cache_bound_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENTRIES_ENV, "0")
    inner = Counting()
    batcher = EmbeddingBatcher(inner)
    try:
        batcher.embed(["same text"] * 5, MESSAGES)
        batcher.embed(["same text"] * 5, MESSAGES)
        assert inner.seen == ["same text", "same text"]  # off: only one call's repeats fold
    finally:
        batcher.close()
    monkeypatch.setenv(ENTRIES_ENV, "lots")
    with pytest.raises(ValueError, match=ENTRIES_ENV):
        EmbeddingBatcher(inner)


def test_the_cache_drops_the_least_recently_used_text_past_its_bound() -> None:
    cache = TextVectors(max_entries=2)
    rows = np.eye(3, dtype=np.float32)
    cache.keep(["a", "b"], rows[:2])
    assert cache.known(["a"])[0] is not None  # "a" is now the most recent
    cache.keep(["c"], rows[2:])
    found = cache.known(["a", "b", "c"])
    assert [v is not None for v in found] == [True, False, True]
    assert len(cache) == 2
