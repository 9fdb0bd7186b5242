"""The in-memory entity vector cache answers exactly like the index on disk."""

from __future__ import annotations

import random

import numpy as np
import pytest

from backends.sqlite.driver import open_engine
from backends.sqlite.vectors import CachedIndex, make_index


@pytest.mark.parametrize("kind", ["sqlite-vec", "numpy"])
def test_cache_tracks_adds_updates_and_deletes(kind: str) -> None:
    engine, info = open_engine(":memory:", want_vec=kind == "sqlite-vec")
    if kind == "sqlite-vec":
        assert info.vec_version is not None
    rng = random.Random(7)
    np_rng = np.random.default_rng(7)
    dim = 16
    with engine.connect() as conn, conn.begin():
        truth = make_index(kind, "t", dim)  # type: ignore[arg-type]
        cached = CachedIndex(make_index(kind, "c", dim), dim)  # type: ignore[arg-type]
        truth.create(conn)
        cached.create(conn)
        live: set[int] = set()
        for step in range(400):
            action = rng.random()
            if action < 0.6 or not live:
                pk = rng.randrange(1, 300)  # re-adding an existing pk updates it
                vec = np_rng.standard_normal((1, dim)).astype(np.float32)
                vec /= np.linalg.norm(vec)
                row = [(pk, rng.choice(["ws1", "ws2"]), rng.choice(["person", "tool"]))]
                for index in (truth, cached):
                    index.delete(conn, [pk])  # a pk lives in one partition at a time
                    index.add(conn, row, vec)
                live.add(pk)
            else:
                gone = rng.sample(sorted(live), k=min(3, len(live)))
                for index in (truth, cached):
                    index.delete(conn, gone)
                live -= set(gone)
            if step % 20 == 0:
                query = np_rng.standard_normal(dim).astype(np.float32)
                query /= np.linalg.norm(query)
                for part in ("ws1", "ws2"):
                    for sub in (None, "person"):
                        want = truth.search(conn, query, 10, part, sub)
                        got = cached.search(conn, query, 10, part, sub)
                        assert [pk for pk, _ in got] == [pk for pk, _ in want]
                        assert np.allclose([s for _, s in got], [s for _, s in want], atol=1e-5)
    engine.dispose()
