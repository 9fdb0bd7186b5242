"""A turn's reads never touch the writer, and its entity vectors are never stale.

``recall_turn`` is two reader jobs (messages; entities); entity vector search runs on
reader threads against the snapshot the writer publishes at commit
(``entity_snapshots.py``), revalidated against the workspace's generation stamp, so an
entity another store (or process) added to the file is found on the very next turn, and an
entity this store added is published without a reload.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import create_engine

from backends.sqlite import SQLiteBackend, conversations
from backends.sqlite.entity_snapshots import SnapshotIndex
from backends.sqlite.vectors import CachedIndex, NumpyIndex
from nams_local import NewMessage
from nams_local.embeddings import HashingEmbedder

from .turn_requests import USER, full_request


def _open(path: Path) -> SQLiteBackend:
    return SQLiteBackend(path, embedder=HashingEmbedder(), extraction="off")


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteBackend]:
    async with _open(tmp_path / "turns.db") as backend:
        yield backend


async def _conversation(backend: SQLiteBackend) -> str:
    older = await backend.create_conversation(USER)
    await backend.add_messages(older.id, [NewMessage(role="user", content="I moved to Lima.")])
    await backend.record_step(older.id, "Alex lives in Lima", "direct response")
    current = await backend.create_conversation(USER)
    await backend.add_messages(
        current.id, [NewMessage(role="user", content="I write Python at work.")]
    )
    alex = await backend.add_entity("Alex", "person", "the user (me)")
    lima = await backend.add_entity("Lima", "place", "a city in Peru")
    await backend.add_relationship(alex.id, lima.id, "LIVES_IN")
    return current.id


def _entities(backend: SQLiteBackend) -> SnapshotIndex:
    vectors = backend.store.vectors
    assert vectors is not None
    return vectors.entities


async def test_a_turn_is_two_reader_jobs_and_no_writer_job(store: SQLiteBackend) -> None:
    conv = await _conversation(store)
    await store.recall_turn(full_request(conv, "where do I live?"))  # warm: the snapshot loads
    writer = store.store.writer
    units, reads = writer.units, store.store.reads
    recall = await store.recall_turn(full_request(conv, "which city is Lima in?"))
    assert store.store.reads - reads == 2  # messages and steps; entities (turns.py)
    assert writer.units - units == 0
    assert [e.name for e in recall.entities][:1] == ["Lima"]
    assert recall.user is not None and recall.user.name == "Alex"
    assert recall.details[recall.user.id].relationships  # graph expansion needs no call


async def test_an_entity_added_here_is_published_by_the_writer_not_reloaded(
    store: SQLiteBackend,
) -> None:
    conv = await _conversation(store)
    await store.recall_turn(full_request(conv, "where do I live?"))
    loads = _entities(store).reader_loads
    await store.add_entity("Quokka Island", "place", "where the quokkas are")
    found = await store.search_entities("Quokka Island", limit=3, mode="vector")
    assert [e.name for e in found.items][:1] == ["Quokka Island"]
    recall = await store.recall_turn(full_request(conv, "Quokka Island"))
    assert "Quokka Island" in [e.name for e in recall.entities]
    assert _entities(store).reader_loads == loads


async def test_an_entity_another_store_adds_is_found_on_the_next_turn(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    async with _open(path) as here, _open(path) as there:
        conv = await _conversation(here)
        await here.recall_turn(full_request(conv, "where do I live?"))  # snapshot published
        before = await here.search_entities("Quokka Island", limit=5, mode="vector")
        assert "Quokka Island" not in [e.name for e in before.items]
        added = await there.add_entity("Quokka Island", "place", "where the quokkas are")
        found = await here.search_entities("Quokka Island", limit=3, mode="vector")
        assert [e.id for e in found.items][:1] == [added.id]
        recall = await here.recall_turn(full_request(conv, "Quokka Island"))
        assert added.id in [e.id for e in recall.entities]
        await there.delete_entity(added.id)
        gone = await here.search_entities("Quokka Island", limit=5, mode="vector")
        assert added.id not in [e.id for e in gone.items]


def test_a_frozen_partition_never_changes_under_its_reader() -> None:
    """The writer patches its partition in place (a re-embedded entity overwrites its row,
    a removed one is replaced by the last row): a frozen view taken before keeps exactly
    the rows it had (copy on write), while appends need no copy."""
    dim = 8
    rng = np.random.default_rng(7)
    index = CachedIndex(NumpyIndex("entities", dim), dim)
    engine = create_engine("sqlite://")
    with engine.begin() as conn:
        index.create(conn)
        index.add(conn, [(pk, "w", "place") for pk in range(5)], rng.random((5, dim), np.float32))
        index.search(conn, np.ones(dim, np.float32), 1, "w")  # loads the partition
        view = index.frozen("w")
        assert view is not None
        before = view.matrix.copy(), view.pks.copy(), view.subs
        index.add(conn, [(9, "w", "person")], rng.random((1, dim), np.float32))  # append
        assert np.array_equal(view.matrix, before[0])
        index.add(conn, [(1, "w", "place")], np.ones((1, dim), np.float32))  # overwrite
        index.delete(conn, [0])  # the last row moves into row 0
        after = index.frozen("w")
    engine.dispose()
    assert np.array_equal(view.matrix, before[0])
    assert np.array_equal(view.pks, before[1])
    assert view.subs == before[2]
    assert after is not None and sorted(after.pks.tolist()) == [1, 2, 3, 4, 9]
    assert np.array_equal(after.matrix[after.pks.tolist().index(1)], np.ones(dim, np.float32))


TALK = (
    "We hiked to the lake near Lima and the trail was muddy.",
    "My sister Priya flew to Lima for the marathon.",
    "The marathon route passes the old lake road.",
    "I bought new trail shoes before the hike.",
    "Priya says the lake is cold in May.",
)


@pytest.mark.parametrize("shared_rows", [2_000, 1])
async def test_one_text_query_for_all_conversations_ranks_as_one_each(
    store: SQLiteBackend, monkeypatch: pytest.MonkeyPatch, shared_rows: int
) -> None:
    """Cross-session search reads the BM25 hits of every conversation in one FTS5 query:
    each conversation's hits and scores equal its own search's, also on the fallback (one
    query each) past ``MAX_SHARED_TEXT_ROWS``."""
    monkeypatch.setattr(conversations, "MAX_SHARED_TEXT_ROWS", shared_rows)
    convs = []
    for i in range(4):
        conv = await store.create_conversation(USER)
        texts = TALK[i:] + TALK[:i]
        await store.add_messages(conv.id, [NewMessage(role="user", content=t) for t in texts])
        convs.append(conv.id)
    for query in ("lake trail", "Priya marathon in Lima", "cold May hike shoes", "zzqxv"):
        groups = await store.search_user_messages(
            USER, query, conversation_limit=4, per_conversation_limit=2
        )
        assert sorted(g.conversation_id for g in groups) == sorted(convs)
        for group in groups:
            alone = await store.search_messages(group.conversation_id, query, limit=2)
            assert [(m.id, m.score) for m in group.messages] == [
                (m.id, m.score) for m in alone.items
            ]
