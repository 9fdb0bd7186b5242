"""Relationships, the graph, lookup by name, neighbourhoods and merges."""

from __future__ import annotations

import pytest

from nams_local.backend import MemoryBackend
from nams_local.errors import InvalidInputError, NotFoundError, NotSupportedError

from .support import (
    UNKNOWN_ID,
    graph_edges,
    graph_node_ids,
    ids,
    relate,
    rels,
    supported_modes,
    text_mode,
)

# -- relationships -----------------------------------------------------------------------


async def test_add_relationship_shows_on_both_ends(backend: MemoryBackend) -> None:
    alice = await backend.add_entity("Alice", "person")
    acme = await backend.add_entity("Acme", "organization")

    relationship = await relate(
        backend,
        alice,
        acme,
        "WORKS_AT",
        properties={"since": "2020", "team": "R&D"},
        confidence=0.8,
    )

    if relationship is None:
        return  # NotSupportedError was asserted by relate()
    assert relationship.id
    assert (relationship.source_id, relationship.target_id, relationship.type) == (
        alice.id,
        acme.id,
        "WORKS_AT",
    )
    assert relationship.properties == {"since": "2020", "team": "R&D"}
    assert relationship.confidence == pytest.approx(0.8)

    (out,) = rels(await backend.get_entity(alice.id))
    assert (out.type, out.target_id, out.target_name, out.target_type, out.direction) == (
        "WORKS_AT",
        acme.id,
        "Acme",
        "organization",
        "outgoing",
    )
    assert out.id == relationship.id
    assert out.properties == {"since": "2020", "team": "R&D"}
    assert out.confidence == pytest.approx(0.8)

    (inc,) = rels(await backend.get_entity(acme.id))
    assert (inc.type, inc.target_id, inc.target_name, inc.target_type, inc.direction) == (
        "WORKS_AT",
        alice.id,
        "Alice",
        "person",
        "incoming",
    )
    assert inc.id == relationship.id


async def test_delete_relationship(backend: MemoryBackend) -> None:
    alice = await backend.add_entity("Alice", "person")
    bob = await backend.add_entity("Bob", "person")
    kept = await relate(backend, alice, bob, "KNOWS")
    doomed = await relate(backend, alice, bob, "OWES_MONEY_TO")

    if kept is None or doomed is None:
        with pytest.raises(NotSupportedError):
            await backend.delete_relationship(UNKNOWN_ID)
        return
    await backend.delete_relationship(doomed.id)

    assert [r.type for r in rels(await backend.get_entity(alice.id))] == ["KNOWS"]
    assert [r.type for r in rels(await backend.get_entity(bob.id))] == ["KNOWS"]
    assert {e.id for e in (await backend.get_graph()).edges} == {kept.id}
    await backend.delete_relationship(doomed.id)  # idempotent: already gone is no error
    await backend.delete_relationship(UNKNOWN_ID)
    assert {e.id for e in (await backend.get_graph()).edges} == {kept.id}


@pytest.mark.parametrize("unknown_end", ["source", "target", "both"])
async def test_add_relationship_with_unknown_entity(
    backend: MemoryBackend, unknown_end: str
) -> None:
    known = await backend.add_entity("Alice", "person")
    source = UNKNOWN_ID if unknown_end in ("source", "both") else known.id
    target = UNKNOWN_ID if unknown_end in ("target", "both") else known.id
    expected = NotFoundError if backend.capabilities.relationship_writes else NotSupportedError

    with pytest.raises(expected):
        await backend.add_relationship(source, target, "KNOWS")

    assert rels(await backend.get_entity(known.id)) == []
    assert (await backend.get_graph()).edges == []


# -- graph -------------------------------------------------------------------------------


async def test_graph_reflects_entities_and_relationships(backend: MemoryBackend) -> None:
    alice = await backend.add_entity("Alice", "person", "An engineer")
    acme = await backend.add_entity("Acme", "organization")
    paris = await backend.add_entity("Paris", "location")
    works = await relate(backend, alice, acme, "WORKS_AT", {"role": "cto", "years": 3}, 0.9)
    based = await relate(backend, acme, paris, "BASED_IN")

    graph = await backend.get_graph()

    nodes = {n.id: (n.name, n.type) for n in graph.nodes}
    assert nodes == {
        alice.id: ("Alice", "person"),
        acme.id: ("Acme", "organization"),
        paris.id: ("Paris", "location"),
    }
    if works is None or based is None:
        assert graph.edges == []
        return
    edges = {e.id: (e.source, e.target, e.type) for e in graph.edges}
    assert edges == {
        works.id: (alice.id, acme.id, "WORKS_AT"),
        based.id: (acme.id, paris.id, "BASED_IN"),
    }
    (works_edge,) = [e for e in graph.edges if e.id == works.id]
    assert works_edge.properties == {"role": "cto", "years": 3}
    assert works_edge.confidence == pytest.approx(0.9)


async def test_empty_graph(backend: MemoryBackend) -> None:
    graph = await backend.get_graph()

    assert graph.nodes == []
    assert graph.edges == []


# -- get_entity_by_name ------------------------------------------------------------------


async def test_get_entity_by_name_is_case_and_space_insensitive(backend: MemoryBackend) -> None:
    ada = await backend.add_entity("Ada Lovelace", "person")
    await backend.add_entity("Lovelace Street", "location")

    if not backend.capabilities.entity_by_name:
        with pytest.raises(NotSupportedError):
            await backend.get_entity_by_name("Ada Lovelace")
        return
    for spelling in ("Ada Lovelace", "ada lovelace", "ADA LOVELACE", "  Ada Lovelace  "):
        found = await backend.get_entity_by_name(spelling)
        assert found is not None, spelling
        assert (found.id, found.name, found.type) == (ada.id, "Ada Lovelace", "person")
    found = await backend.get_entity_by_name("Ada   Lovelace")
    assert found is not None
    assert found.id == ada.id
    typed = await backend.get_entity_by_name("ada lovelace", type="person")
    assert typed is not None
    assert typed.id == ada.id
    assert await backend.get_entity_by_name("Ada Lovelace", type="location") is None
    assert await backend.get_entity_by_name("Ada") is None
    assert await backend.get_entity_by_name("Grace Hopper") is None


# -- entity_neighbourhood ----------------------------------------------------------------


async def test_neighbourhood_depth_on_a_chain(backend: MemoryBackend) -> None:
    a = await backend.add_entity("Node A", "concept")
    b = await backend.add_entity("Node B", "concept")
    c = await backend.add_entity("Node C", "concept")
    loner = await backend.add_entity("Node D", "concept")
    ab = await relate(backend, a, b, "LEADS_TO")
    bc = await relate(backend, b, c, "LEADS_TO")

    if not backend.capabilities.graph_neighbourhood:
        with pytest.raises(NotSupportedError):
            await backend.entity_neighbourhood(a.id, depth=1)
        return
    alone = await backend.entity_neighbourhood(loner.id, depth=2)
    assert ids(alone.nodes) == [loner.id]
    assert alone.edges == []
    if ab is None or bc is None:
        return

    one = await backend.entity_neighbourhood(a.id, depth=1)
    two = await backend.entity_neighbourhood(a.id, depth=2)
    from_end = await backend.entity_neighbourhood(c.id, depth=1)

    assert set(ids(one.nodes)) == {a.id, b.id}
    assert {e.id for e in one.edges} == {ab.id}
    assert set(ids(two.nodes)) == {a.id, b.id, c.id}
    assert {(e.source, e.target, e.type) for e in two.edges} == {
        (a.id, b.id, "LEADS_TO"),
        (b.id, c.id, "LEADS_TO"),
    }
    assert set(ids(from_end.nodes)) == {b.id, c.id}
    assert {e.id for e in from_end.edges} == {bc.id}


# -- merge -------------------------------------------------------------------------------


async def test_merge_moves_relationships_and_hides_source(backend: MemoryBackend) -> None:
    conversation = await backend.create_conversation()
    source = await backend.add_entity("Bobby Tables", "person", "A duplicate")
    target = await backend.add_entity("Robert Tables", "person", "The canonical one")
    friend = await backend.add_entity("Carol", "person")
    mentor = await backend.add_entity("Dave", "person")
    out = await relate(backend, source, friend, "KNOWS")
    inc = await relate(backend, mentor, source, "MENTORS")
    source_mention = await backend.add_message(
        conversation.id, "user", "I had lunch with Bobby Tables today"
    )
    target_mention = await backend.add_message(
        conversation.id, "user", "Robert Tables sent the report"
    )

    result = await backend.merge_entities(source.id, target.id)

    assert (result.status, result.source_id, result.target_id) == (
        "merged",
        source.id,
        target.id,
    )
    source_details = await backend.get_entity(source.id)
    same_as = rels(source_details, type="SAME_AS")
    assert [(r.target_id, r.direction) for r in same_as] == [(target.id, "outgoing")]
    listed = ids(await backend.list_entities())
    assert source.id not in listed
    assert target.id in listed
    for mode, _ in supported_modes(backend):
        for query in ("Bobby Tables", "duplicate"):
            found = await backend.search_entities(query, limit=50, mode=mode)
            assert source.id not in ids(found.items), (mode, query)
    nodes = await graph_node_ids(backend)
    assert source.id not in nodes
    assert target.id in nodes
    history = await backend.get_entity_history(target.id)
    mentioned = {m.message_id for m in history.mentions}
    assert {source_mention.id, target_mention.id} <= mentioned
    if out is None or inc is None:
        return
    target_details = await backend.get_entity(target.id)
    assert [(r.target_id, r.direction) for r in rels(target_details, type="KNOWS")] == [
        (friend.id, "outgoing")
    ]
    assert [(r.target_id, r.direction) for r in rels(target_details, type="MENTORS")] == [
        (mentor.id, "incoming")
    ]
    assert rels(source_details, type="KNOWS") == []
    assert rels(source_details, type="MENTORS") == []
    assert [(r.target_id, r.direction) for r in rels(await backend.get_entity(friend.id))] == [
        (target.id, "incoming")
    ]
    assert [(r.target_id, r.direction) for r in rels(await backend.get_entity(mentor.id))] == [
        (target.id, "outgoing")
    ]
    edges = await graph_edges(backend)
    assert (target.id, friend.id, "KNOWS") in edges
    assert (mentor.id, target.id, "MENTORS") in edges
    assert all(source.id not in (s, t) for s, t, type_ in edges if type_ != "SAME_AS")


async def test_merge_into_merged_entity_is_refused(backend: MemoryBackend) -> None:
    source = await backend.add_entity("Jon Smith", "person")
    target = await backend.add_entity("John Smith", "person")
    third = await backend.add_entity("J. Smith", "person")
    await backend.merge_entities(source.id, target.id)

    with pytest.raises(InvalidInputError):
        await backend.merge_entities(third.id, source.id)

    assert third.id in ids(await backend.list_entities())
    assert rels(await backend.get_entity(third.id), type="SAME_AS") == []
    assert third.id in await graph_node_ids(backend)


async def test_merge_leaves_target_searchable(backend: MemoryBackend) -> None:
    source = await backend.add_entity("Big Blue", "organization", "Nickname")
    target = await backend.add_entity("IBM", "organization", "International Business Machines")

    await backend.merge_entities(source.id, target.id)

    found = await backend.search_entities("IBM", mode=text_mode(backend))
    assert ids(found.items) == [target.id]
    details = await backend.get_entity(target.id)
    assert (details.name, details.description) == ("IBM", "International Business Machines")
