"""Entity-name resolution does bounded work, whatever names a caller sends.

Issue 15, item 2: on main at 295f78a two entities with near-identical 12,000-character
names made the second ``POST /v1/entities`` take 25 s (``difflib.SequenceMatcher`` is
quadratic), holding the writer every tenant shares. Names are now at most
``MAX_ENTITY_NAME_CHARS`` (400 over it) and compared with rapidfuzz's bit-parallel LCS.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from backends.sqlite import SQLiteBackend
from backends.sqlite.resolution import Resolution
from nams_local.errors import InvalidInputError
from nams_local.server import create_app
from nams_local.validation import MAX_ENTITY_NAME_CHARS
from tests.asgi import in_process
from tests.server.support import Api, assert_error


def test_near_identical_long_keys_compare_in_linear_time() -> None:
    """Reproduces: 5,000-character near-identical keys took seconds in difflib (quadratic);
    the comparison must stay far below a second and still find the near match. CPU time
    of this thread, not wall time: a loaded machine stretches the latter, not the former."""
    key = "ab" * 2500
    near = key[:-1] + "z"
    started = time.thread_time()
    found = Resolution().candidates(key, [("other", near)])
    elapsed = time.thread_time() - started
    assert [id_ for id_, _ in found] == ["other"] and 0.99 < found[0][1] < 1.0
    assert elapsed < 0.5, f"comparing two 5,000-character names took {elapsed:.2f} CPU s"


def test_a_far_name_is_not_a_candidate() -> None:
    assert Resolution().candidates("techcorp", [("x", "bananaland")]) == []


async def test_an_entity_name_over_the_bound_is_refused(tmp_path: Path) -> None:
    """Reproduces: a 12,000-character name was accepted. Now 400 (``InvalidInputError``)
    before anything is written, in the library and over HTTP."""
    async with SQLiteBackend(tmp_path / "m.db", embeddings=False, extraction="off") as store:
        with pytest.raises(InvalidInputError, match=str(MAX_ENTITY_NAME_CHARS)):
            await store.add_entity("n" * (MAX_ENTITY_NAME_CHARS + 1), "CONCEPT")
        async with in_process(create_app(store)) as client:
            api = Api(client, "t")
            long = "Acme " + "x" * 12_000
            assert_error(await api.post("/v1/entities", json={"name": long, "type": "ORG"}), 400)
            assert (await api.ok("GET", "/v1/entities"))["entities"] == []
        assert await store.list_entities() == []


async def test_near_names_at_the_bound_are_fast_and_reported(tmp_path: Path) -> None:
    """Two near-identical names of the longest allowed length: the second write is quick
    and lists the first as a merge candidate (computed on the workspace's read lane).
    "Quick" in CPU time of the whole process (the work runs on the store's threads), which a
    loaded machine does not stretch as it does wall time."""
    first = "q" * (MAX_ENTITY_NAME_CHARS - 1) + "a"
    second = "q" * (MAX_ENTITY_NAME_CHARS - 1) + "b"
    async with SQLiteBackend(tmp_path / "m.db", embeddings=False, extraction="off") as store:
        one = await store.add_entity(first, "CONCEPT")
        started = time.process_time()
        two = await store.add_entity(second, "CONCEPT")
        elapsed = time.process_time() - started
        assert two.reused is False and two.id != one.id
        assert [c.id for c in two.merge_candidates or []] == [one.id]
        assert elapsed < 2.0, f"the second write took {elapsed:.2f} CPU s"
