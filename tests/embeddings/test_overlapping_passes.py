"""Two callers at once on one MiniLMEmbedder: the overlapping pass runs single-threaded
(``MiniLMEmbedder._session_for_run``) and its vectors are the lone pass's.

Why it matters: a store runs the model from a bulk thread and a query thread at once; on
one session with two intra-op threads each that was four compute threads on two cores
(~20 % more CPU a text). The narrow session must give the same vectors, or stored
vectors and query vectors would drift apart depending on timing.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from nams_local.embeddings import MiniLMEmbedder

pytestmark = pytest.mark.slow

TEXTS = [
    f"message {i}: the harbour office moved the ferry timetable to Thursday" for i in range(48)
]
QUERIES = [f"when does ferry {i} leave" for i in range(24)]


def test_an_overlapping_pass_runs_narrow_and_gives_the_same_vectors() -> None:
    embedder = MiniLMEmbedder(intra_op_num_threads=2, query_cache_size=0)
    alone_texts = embedder.embed(TEXTS)
    alone_queries = np.stack([embedder.embed([q])[0] for q in QUERIES])
    assert embedder.narrow_passes == 0  # one caller: every pass had both threads
    started = threading.Barrier(2)
    out: dict[str, np.ndarray] = {}

    def bulk() -> None:
        started.wait(10)
        out["texts"] = np.concatenate([embedder.embed(TEXTS) for _ in range(3)])[: len(TEXTS)]

    def queries() -> None:
        started.wait(10)
        out["queries"] = np.stack([embedder.embed([q])[0] for q in QUERIES])

    threads = [threading.Thread(target=bulk), threading.Thread(target=queries)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert embedder.narrow_passes > 0  # the passes did overlap
    assert embedder.narrow_passes < embedder.passes
    np.testing.assert_allclose(out["texts"], alone_texts, atol=1e-5)
    np.testing.assert_allclose(out["queries"], alone_queries, atol=1e-5)
