"""``purge_user`` on the engine: nothing of the user is left in the rows or in the bytes of
the file (and its ``-wal`` / ``-shm``), while another user's data answers every read as
before — text and vector search, the graph, Cypher, items, the legacy records.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from backends.sqlite import SQLiteBackend
from nams_local.errors import InvalidInputError
from nams_local.items import ItemGet, StoredItem
from nams_local.purge_report import MAX_USER_ID_CHARS
from tests.purge_seed import Seeded, files_holding, open_engine, seed_user

SHARED_PLACE = "Harbourtown"


async def _seed_two(backend: SQLiteBackend) -> tuple[Seeded, Seeded]:
    alice = await seed_user(backend, "alice", "zebrafish7731", SHARED_PLACE)
    bob = await seed_user(backend, "bob", "otterpond5512", SHARED_PLACE)
    return alice, bob


async def _cypher_names(backend: SQLiteBackend) -> set[str]:
    result = await backend.query("MATCH (e:Entity) RETURN e.name AS name")
    return {str(row["name"]) for row in result.rows}


async def _assert_intact(backend: SQLiteBackend, bob: Seeded) -> None:
    """Bob's data, through the API, exactly as seeded."""
    conversations = await backend.list_conversations(bob.user_id)
    assert {c.id for c in conversations} >= set(bob.conversation_ids[:2])
    first = bob.conversation_ids[0]
    messages = await backend.list_messages(first, limit=200)
    assert len(messages) == 8 and all(bob.marker in m.content.lower() for m in messages[:1])
    for mode in ("text", "vector", "hybrid"):
        hits = await backend.search_messages(first, "Otterpond5512corp", mode=mode)
        assert hits.items, mode
    assert await backend.list_observations(first)
    assert await backend.list_reflections(first)
    steps = await backend.list_steps(first)
    assert [s.id for s in steps] == [bob.step_id]
    trace = await backend.get_trace(first)
    assert [(call.tool_name, call.step_id) for call in trace.tool_calls] == [
        ("search", bob.step_id)
    ]
    names = {e.name for e in await backend.list_entities()}
    assert set(bob.own_entity_names) <= names and SHARED_PLACE in names
    graph = await backend.get_graph()
    assert any(edge.type == "WORKS_AT" for edge in graph.edges)
    assert set(bob.own_entity_names) <= await _cypher_names(backend)
    found = await backend.search_entities("Otterpond5512corp", mode="vector")
    assert any(e.name == "Otterpond5512corp" for e in found.items)
    [item] = await backend.item_batch([ItemGet(("memories", bob.user_id), f"{bob.marker}-fact")])
    assert isinstance(item, StoredItem) and bob.marker in str(item.value)
    session = await backend.legacy.get_session(bob.session_id)
    assert session.exists and session.messages
    assert await backend.legacy.get_trace(bob.trace_id) is not None


async def test_purge_leaves_no_byte_of_the_user_and_keeps_the_other(tmp_path: Path) -> None:
    db = tmp_path / "two-users.db"
    async with open_engine(db) as backend:
        alice, bob = await _seed_two(backend)
        assert files_holding(db, alice.marker), "the seed never reached the file"
        before = await _cypher_names(backend)  # a Cypher worker now caches the graph
        assert set(alice.own_entity_names) <= before

        report = await backend.purge_user(alice.user_id)

        assert report.complete and report.compacted and report.compaction_seconds is not None
        assert report.deleted["conversations"] == 3
        assert report.deleted["messages"] == 11
        assert report.deleted["reasoning_steps"] == 1 and report.deleted["tool_calls"] == 1
        assert report.deleted["observations"] >= 1 and report.deleted["reflections"] >= 1
        assert report.deleted["entities"] >= 3 and report.deleted["relationships"] >= 3
        assert report.deleted["items"] == 1 and report.deleted["traces"] == 1
        assert report.kept_shared_entities >= 1  # Harbourtown: Bob lives there too
        # Every byte of the file, its WAL and its shared-memory index, while still open.
        assert files_holding(db, alice.marker) == []
        assert files_holding(db, alice.user_id) == []
        assert files_holding(db, bob.marker), "the other user's data is gone from the file"

        assert await backend.list_conversations(alice.user_id) == []
        names = {e.name for e in await backend.list_entities()}
        assert not names & set(alice.own_entity_names)
        assert not await _cypher_names(backend) & set(alice.own_entity_names)
        found = await backend.search_entities("Zebrafish7731corp", mode="vector", limit=50)
        assert not any(alice.marker in e.name.lower() for e in found.items)
        shared = await backend.get_entity_by_name(SHARED_PLACE)
        assert shared is not None
        history = await backend.get_entity_history(shared.id)
        assert history.mentions
        assert {m.conversation_id for m in history.mentions} <= set(bob.conversation_ids)
        await _assert_intact(backend, bob)
    # Closed and reopened: the file still opens, passes its check, and holds Bob only.
    assert files_holding(db, alice.marker) == []
    async with open_engine(db) as reopened:
        await _assert_intact(reopened, bob)


async def test_purge_is_per_workspace_and_repeatable(tmp_path: Path) -> None:
    db = tmp_path / "workspaces.db"
    async with open_engine(db, workspace="one") as one:
        two = one.for_workspace("two")
        try:
            mine = await seed_user(one, "carol", "heron4410", SHARED_PLACE)
            theirs = await seed_user(two, "carol", "heron4410", SHARED_PLACE)
            report = await one.purge_user(mine.user_id)
            assert report.deleted["conversations"] == 3
            assert await one.list_conversations(mine.user_id) == []
            # The same user id in another workspace is another user: untouched.
            kept = await two.list_conversations(theirs.user_id)
            assert {c.id for c in kept} == set(theirs.conversation_ids)
            again = await one.purge_user(mine.user_id)
            assert again.complete and not any(again.deleted.values())
            assert not again.compacted  # nothing new to scrub: no VACUUM holds the writer
        finally:
            await two.aclose()


async def test_purge_in_memory_store_reports_no_compaction(engine: SQLiteBackend) -> None:
    conv = await engine.create_conversation("dave")
    await engine.add_message(conv.id, "user", "hello from dave")
    report = await engine.purge_user("dave")
    assert report.deleted["messages"] == 1 and report.complete
    assert report.compacted is False and report.compaction_seconds is None


@pytest.mark.parametrize("user_id", ["", "   ", "x" * (MAX_USER_ID_CHARS + 1)])
async def test_refused_user_ids_delete_nothing(engine: SQLiteBackend, user_id: str) -> None:
    conv = await engine.create_conversation(user_id)
    await engine.add_message(conv.id, "user", "still here")
    with pytest.raises(InvalidInputError, match="user_id"):
        await engine.purge_user(user_id)
    assert len(await engine.list_messages(conv.id)) == 1


async def test_what_others_hold_stays(tmp_path: Path) -> None:
    """A person another user talks about, and an entity written through the API, are not
    the purged user's: they stay, without the purged user's mentions."""
    async with open_engine(tmp_path / "shared.db") as backend:
        api_made = await backend.add_entity("Quillworks", "organization")
        erin = await backend.create_conversation("erin")
        frank = await backend.create_conversation("frank")
        await backend.add_message(erin.id, "user", "My name is Erin Vale.")
        await backend.add_message(erin.id, "user", "I work at Quillworks.")
        await backend.add_message(frank.id, "user", "My friend Erin Vale lives in Oslo.")
        await backend.wait_for_extraction()
        people = {e.name for e in await backend.list_entities()}
        assert "Erin Vale" in people

        report = await backend.purge_user("erin")

        names = {e.name: e.id for e in await backend.list_entities()}
        assert "Erin Vale" in names and names.get("Quillworks") == api_made.id
        assert report.kept_shared_entities >= 2
        history = await backend.get_entity_history(names["Erin Vale"])
        assert {m.conversation_id for m in history.mentions} == {frank.id}
        graph = await backend.get_graph()
        kinds = {edge.type for edge in graph.edges}
        assert "WORKS_AT" not in kinds and "LIVES_IN" in kinds  # Erin's statement went
