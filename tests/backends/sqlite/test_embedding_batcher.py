"""The store's model threads: bulk work in chunks, queries and small embeds never behind it."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from backends.sqlite.embedding_batcher import CHUNK_TEXTS, EmbeddingBatcher
from nams_local.embeddings import HashingEmbedder, Matrix


class Gated(HashingEmbedder):
    """Runs containing a text starting with ``hold`` wait for ``gate``; ``boom`` fails."""

    def __init__(self) -> None:
        super().__init__(dimension=32)
        self.gate = threading.Event()
        self.holding = threading.Event()
        self.runs: list[int] = []

    def _embed(self, texts: list[str]) -> Matrix:
        self.runs.append(len(texts))
        if any(t.startswith("boom") for t in texts):
            raise RuntimeError("model failed")
        if any(t.startswith("hold") for t in texts):
            self.holding.set()
            assert self.gate.wait(30), "the test never opened the gate"
        return super()._embed(texts)


def test_a_bulk_is_embedded_in_chunks_in_the_callers_order() -> None:
    inner = Gated()
    batcher = EmbeddingBatcher(inner)
    try:
        texts = [f"text number {i}" for i in range(100)]
        out = batcher.embed(texts)
        np.testing.assert_allclose(out, HashingEmbedder(dimension=32).embed(texts), atol=1e-6)
        assert inner.runs == [CHUNK_TEXTS, CHUNK_TEXTS, CHUNK_TEXTS, 100 - 3 * CHUNK_TEXTS]
    finally:
        batcher.close()


def test_queries_and_small_embeds_do_not_wait_behind_a_stuck_chunk() -> None:
    inner = Gated()
    batcher = EmbeddingBatcher(inner)
    with ThreadPoolExecutor(1) as pool:
        try:
            stuck = pool.submit(batcher.embed, [f"hold {i}" for i in range(10)])
            assert inner.holding.wait(30)
            one = batcher.embed(["an entity: Lisbon"])
            query = batcher.query("where do I live").result(timeout=30)
            assert one.shape == (1, 32)
            np.testing.assert_allclose(query, inner.embed(["where do I live"])[0], atol=1e-6)
            assert not stuck.done()
        finally:
            inner.gate.set()
        assert stuck.result(timeout=30).shape == (10, 32)
    batcher.close()


def test_a_failed_run_fails_its_callers_only_and_the_threads_go_on() -> None:
    inner = Gated()
    batcher = EmbeddingBatcher(inner)
    try:
        with pytest.raises(RuntimeError, match="model failed"):
            batcher.embed([f"boom {i}" for i in range(40)])
        assert batcher.embed([f"fine {i}" for i in range(40)]).shape == (40, 32)
        assert batcher.query("still here").result(timeout=30).shape == (32,)
    finally:
        batcher.close()
    assert batcher.embed(["after close runs inline"]).shape == (1, 32)


def test_a_text_the_model_fails_on_fails_only_its_own_caller() -> None:
    inner = Gated()
    batcher = EmbeddingBatcher(inner)
    try:
        with ThreadPoolExecutor(1) as pool:
            stuck = pool.submit(batcher.query("hold the model").result, 30)
            assert inner.holding.wait(30)
            # Both wait for the query thread, so they share its next run.
            bad = batcher.query("boom: a text the model cannot take")
            good = batcher.query("an ordinary question")
            inner.gate.set()
            assert stuck.result(timeout=30).shape == (32,)
        assert good.result(timeout=30).shape == (32,)
        with pytest.raises(RuntimeError, match="model failed"):
            bad.result(timeout=30)
    finally:
        inner.gate.set()
        batcher.close()
