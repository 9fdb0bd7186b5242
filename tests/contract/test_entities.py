"""Entities: add, get, list, update, delete, feedback, history."""

from __future__ import annotations

import pytest

from nams_local.backend import MemoryBackend
from nams_local.errors import NotFoundError

from .support import graph_edges, graph_node_ids, ids, relate, rels, text_mode


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


async def test_delete_twice_is_not_found(backend: MemoryBackend) -> None:
    entity = await backend.add_entity("Ephemeral", "concept")
    await backend.delete_entity(entity.id)

    with pytest.raises(NotFoundError):
        await backend.delete_entity(entity.id)


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
