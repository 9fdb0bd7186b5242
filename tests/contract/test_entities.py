"""Entities: add, get, list, update, delete, feedback, history."""

from __future__ import annotations

import pytest

from nams_local.backend import MemoryBackend
from nams_local.errors import NotFoundError

from .support import graph_edges, graph_node_ids, ids, relate, rels, supported_modes, text_mode


async def test_add_then_get_returns_every_field(backend: MemoryBackend) -> None:
    added = await backend.add_entity(
        "Ada Lovelace",
        "person",
        "Mathematician and writer",
        {"born": "1815", "field": "computing"},
    )

    assert added.id
    assert (added.name, added.type, added.description) == (
        "Ada Lovelace",
        "person",
        "Mathematician and writer",
    )
    got = await backend.get_entity(added.id)
    assert got.id == added.id
    assert (got.name, got.type, got.description) == (
        "Ada Lovelace",
        "person",
        "Mathematician and writer",
    )
    assert got.properties == {"born": "1815", "field": "computing"}
    assert got.confidence is not None
    assert 0.0 <= got.confidence <= 1.0
    assert got.created_at is not None
    assert got.relationships == []


async def test_add_with_name_and_type_only(backend: MemoryBackend) -> None:
    added = await backend.add_entity("Rust", "tool")

    got = await backend.get_entity(added.id)

    assert (got.name, got.type) == ("Rust", "tool")
    assert not got.description
    assert got.properties == {}


async def test_list_and_list_by_type(backend: MemoryBackend) -> None:
    ada = await backend.add_entity("Ada Lovelace", "person")
    alan = await backend.add_entity("Alan Turing", "person")
    london = await backend.add_entity("London", "location", "Capital of England")

    everything = await backend.list_entities()
    people = await backend.list_entities(type="person")

    assert set(ids(everything)) == {ada.id, alan.id, london.id}
    listed_london = next(e for e in everything if e.id == london.id)
    assert (listed_london.name, listed_london.type, listed_london.description) == (
        "London",
        "location",
        "Capital of England",
    )
    assert set(ids(people)) == {ada.id, alan.id}
    assert all(e.type == "person" for e in people)
    assert ids(await backend.list_entities(type="location")) == [london.id]
    assert await backend.list_entities(type="spaceship") == []


async def test_update_name_and_description(backend: MemoryBackend) -> None:
    entity = await backend.add_entity("Globex", "organization", "An old description")

    await backend.update_entity(entity.id, name="Initech", description="A new description")

    got = await backend.get_entity(entity.id)
    assert (got.name, got.type, got.description) == (
        "Initech",
        "organization",
        "A new description",
    )
    mode = text_mode(backend)
    assert entity.id in ids((await backend.search_entities("Initech", mode=mode)).items)
    assert entity.id not in ids((await backend.search_entities("Globex", mode=mode)).items)
    listed = {e.id: e.name for e in await backend.list_entities()}
    assert listed == {entity.id: "Initech"}


async def test_update_description_only_keeps_name(backend: MemoryBackend) -> None:
    entity = await backend.add_entity("Hooli", "organization", "Before")

    await backend.update_entity(entity.id, description="After")

    got = await backend.get_entity(entity.id)
    assert (got.name, got.description) == ("Hooli", "After")
    assert entity.id in ids((await backend.search_entities("After", mode=text_mode(backend))).items)


async def test_update_name_only_keeps_description(backend: MemoryBackend) -> None:
    entity = await backend.add_entity("Pied Piper", "organization", "Compression startup")

    await backend.update_entity(entity.id, name="Pied Piper Inc")

    got = await backend.get_entity(entity.id)
    assert (got.name, got.description) == ("Pied Piper Inc", "Compression startup")


async def test_delete_removes_entity_and_its_relationships(backend: MemoryBackend) -> None:
    doomed = await backend.add_entity("Umbrella Corp", "organization")
    friend = await backend.add_entity("Alice", "person")
    fan = await backend.add_entity("Bob", "person")
    outgoing = await relate(backend, doomed, friend, "EMPLOYS")
    incoming = await relate(backend, fan, doomed, "ADMIRES")
    unrelated = await relate(backend, fan, friend, "KNOWS")
    if outgoing is not None:
        assert rels(await backend.get_entity(friend.id), target_id=doomed.id)
        assert (doomed.id, friend.id, "EMPLOYS") in await graph_edges(backend)

    await backend.delete_entity(doomed.id)

    with pytest.raises(NotFoundError):
        await backend.get_entity(doomed.id)
    assert doomed.id not in ids(await backend.list_entities())
    found = await backend.search_entities("Umbrella", mode=text_mode(backend))
    assert doomed.id not in ids(found.items)
    assert await graph_node_ids(backend) == {friend.id, fan.id}
    assert rels(await backend.get_entity(friend.id), target_id=doomed.id) == []
    assert rels(await backend.get_entity(fan.id), target_id=doomed.id) == []
    edges = await graph_edges(backend)
    assert all(doomed.id not in (source, target) for source, target, _ in edges)
    if outgoing is not None and incoming is not None and unrelated is not None:
        graph = await backend.get_graph()
        assert {e.id for e in graph.edges} == {unrelated.id}
        assert [r.type for r in rels(await backend.get_entity(fan.id))] == ["KNOWS"]


async def test_delete_is_idempotent(backend: MemoryBackend) -> None:
    entity = await backend.add_entity("Ephemeral", "concept")
    keep = await backend.add_entity("Lasting", "concept")
    await backend.delete_entity(entity.id)

    await backend.delete_entity(entity.id)
    await backend.delete_entity("00000000-0000-4000-8000-000000000000")

    with pytest.raises(NotFoundError):
        await backend.get_entity(entity.id)
    assert [e.id for e in await backend.list_entities()] == [keep.id]


async def test_feedback_reports_updated(backend: MemoryBackend) -> None:
    entity = await backend.add_entity("Marie Curie", "person")

    scored = await backend.entity_feedback(entity.id, user_score=0.9)
    confirmed = await backend.entity_feedback(entity.id, confirmed=True)
    both = await backend.entity_feedback(entity.id, user_score=0.0, confirmed=False)
    top = await backend.entity_feedback(entity.id, user_score=1.0)

    for result in (scored, confirmed, both, top):
        assert result.id == entity.id
        assert result.updated is True
    got = await backend.get_entity(entity.id)
    assert (got.name, got.type) == ("Marie Curie", "person")


async def test_history_lists_every_mentioning_message(backend: MemoryBackend) -> None:
    first = await backend.create_conversation(user_id="u1")
    second = await backend.create_conversation(user_id="u2")
    before = await backend.add_message(first.id, "user", "Yesterday I read about Ramanujan")
    await backend.add_message(first.id, "assistant", "Nothing relevant in this one")
    entity = await backend.add_entity("Ramanujan", "person", "Mathematician")
    after = await backend.add_message(second.id, "assistant", "Ramanujan was self-taught")
    await backend.add_message(second.id, "user", "Let us talk about something else")

    history = await backend.get_entity_history(entity.id)

    assert history.entity_id == entity.id
    assert {(m.message_id, m.conversation_id) for m in history.mentions} == {
        (before.id, first.id),
        (after.id, second.id),
    }
    contents = {m.message_id: m.content for m in history.mentions}
    assert contents == {before.id: before.content, after.id: after.content}


async def test_history_of_unmentioned_entity_is_empty(backend: MemoryBackend) -> None:
    conversation = await backend.create_conversation()
    await backend.add_message(conversation.id, "user", "Talking about the weather")
    entity = await backend.add_entity("Quetzalcoatl", "concept")

    history = await backend.get_entity_history(entity.id)

    assert history.entity_id == entity.id
    assert history.mentions == []


async def test_deleted_entity_is_gone_from_every_search_mode(backend: MemoryBackend) -> None:
    doomed = await backend.add_entity("Umbrella Corp", "organization", "Makes umbrellas")
    kept = await backend.add_entity("Parasol Ltd", "organization", "Makes parasols")

    await backend.delete_entity(doomed.id)

    for mode, _ in supported_modes(backend):
        for query in ("Umbrella Corp", "umbrellas", "organization"):
            found = ids((await backend.search_entities(query, limit=50, mode=mode)).items)
            assert doomed.id not in found, (mode, query)
    assert ids(await backend.list_entities(type="organization")) == [kept.id]


async def test_rename_refreshes_every_lookup(backend: MemoryBackend) -> None:
    entity = await backend.add_entity("Globex", "organization", "A software company")
    await backend.add_entity("Tractor", "vehicle", "A farm vehicle")
    conversation = await backend.create_conversation()
    new_mention = await backend.add_message(conversation.id, "user", "I ate a Mango today")

    await backend.update_entity(entity.id, name="Mango", description="A sweet tropical fruit")

    history = await backend.get_entity_history(entity.id)
    assert new_mention.id in {m.message_id for m in history.mentions}
    if backend.capabilities.entity_by_name:
        found = await backend.get_entity_by_name("mango")
        assert found is not None
        assert found.id == entity.id
        assert await backend.get_entity_by_name("Globex") is None
    if backend.capabilities.vector_search:
        # The embedding must follow the new text: the new name now matches better.
        new = await backend.search_entities("Mango tropical fruit", mode="vector")
        old = await backend.search_entities("Globex software company", mode="vector")
        new_score = next(e.score for e in new.items if e.id == entity.id)
        old_score = next(e.score for e in old.items if e.id == entity.id)
        assert new_score is not None and old_score is not None
        assert new_score > old_score
        assert new.items[0].id == entity.id
