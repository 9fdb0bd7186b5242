"""Persistence: everything survives closing the store and opening it again.

Only the persistent harnesses run these (``persistent_harness``), nothing is skipped.
"""

from __future__ import annotations

import pytest

from nams_local.errors import InvalidInputError
from nams_local.models import NewMessage

from .harnesses import BackendHarness
from .support import graph_snapshot, ids, relate, rels, supported_modes, tick


async def test_conversations_and_messages_survive_reopen(
    persistent_harness: BackendHarness,
) -> None:
    backend = persistent_harness.backend
    first = await backend.create_conversation(user_id="u1", metadata={"topic": "books"})
    await tick()
    second = await backend.create_conversation(user_id="u2")
    single = await backend.add_message(first.id, "user", "I like novels", {"n": [1, {"a": 2}]})
    bulk = await backend.add_messages(
        first.id,
        [
            NewMessage(role="assistant", content="Which ones?"),
            NewMessage(role="user", content="Mostly mysteries"),
        ],
    )
    conversations_before = [c.model_dump() for c in await backend.list_conversations()]
    messages_before = [m.model_dump() for m in await backend.list_messages(first.id)]

    backend = await persistent_harness.reopen()

    assert [c.model_dump() for c in await backend.list_conversations()] == conversations_before
    got = await backend.get_conversation(first.id)
    assert (got.user_id, got.metadata) == ("u1", {"topic": "books"})
    assert (await backend.get_conversation(second.id)).user_id == "u2"
    listed = await backend.list_messages(first.id)
    assert [m.model_dump() for m in listed] == messages_before
    assert ids(listed) == [bulk[1].id, bulk[0].id, single.id]
    assert listed[-1].metadata == {"n": [1, {"a": 2}]}
    assert all(isinstance(m.token_count, int) and m.token_count > 0 for m in listed)
    later = await backend.add_message(first.id, "assistant", "Added after reopening")
    assert ids(await backend.list_messages(first.id, limit=1)) == [later.id]


async def test_entities_and_relationships_survive_reopen(
    persistent_harness: BackendHarness,
) -> None:
    backend = persistent_harness.backend
    alice = await backend.add_entity("Alice", "person", "Engineer", {"team": "core"})
    acme = await backend.add_entity("Acme", "organization", "A company")
    relationship = await relate(backend, alice, acme, "WORKS_AT", {"since": "2021"}, 0.7)
    await backend.update_entity(acme.id, description="A bigger company")
    conversation = await backend.create_conversation()
    mention = await backend.add_message(conversation.id, "user", "Alice says hi")
    alice_before = (await backend.get_entity(alice.id)).model_dump()
    graph_before = await graph_snapshot(backend)

    backend = await persistent_harness.reopen()

    assert (await backend.get_entity(alice.id)).model_dump() == alice_before
    assert (await backend.get_entity(acme.id)).description == "A bigger company"
    assert set(ids(await backend.list_entities())) >= {alice.id, acme.id}
    assert await graph_snapshot(backend) == graph_before
    graph = await backend.get_graph()
    history = await backend.get_entity_history(alice.id)
    assert mention.id in {m.message_id for m in history.mentions}
    if relationship is not None:
        (edge,) = rels(await backend.get_entity(alice.id), type="WORKS_AT")
        assert (edge.id, edge.target_id, edge.direction) == (relationship.id, acme.id, "outgoing")
        assert {e.id for e in graph.edges} == {relationship.id}


async def test_merge_state_survives_reopen(persistent_harness: BackendHarness) -> None:
    backend = persistent_harness.backend
    source = await backend.add_entity("Bobby", "person")
    target = await backend.add_entity("Robert", "person")
    other = await backend.add_entity("Roberta", "person")
    await backend.merge_entities(source.id, target.id)

    backend = await persistent_harness.reopen()

    listed = ids(await backend.list_entities())
    assert source.id not in listed
    assert {target.id, other.id} <= set(listed)
    same_as = rels(await backend.get_entity(source.id), type="SAME_AS")
    assert [(r.target_id, r.direction) for r in same_as] == [(target.id, "outgoing")]
    assert source.id not in {n.id for n in (await backend.get_graph()).nodes}
    assert source.id not in ids((await backend.search_entities("Bobby")).items)
    with pytest.raises(InvalidInputError):
        await backend.merge_entities(other.id, source.id)


async def test_reasoning_survives_reopen(persistent_harness: BackendHarness) -> None:
    backend = persistent_harness.backend
    paris = await backend.add_entity("Paris", "location")
    conversation = await backend.create_conversation()
    first = await backend.record_step(conversation.id, "Going to Paris?", "search", "yes")
    call = await backend.record_tool_call(
        "flights", '{"to": "Paris"}', status="failed", step_id=first.id
    )
    second = await backend.record_step(conversation.id, "Then book", "book")
    trace_before = (await backend.get_trace(conversation.id)).model_dump()
    explanation_before = (await backend.explain_step(first.id)).model_dump()

    backend = await persistent_harness.reopen()

    assert ids(await backend.list_steps(conversation.id)) == [first.id, second.id]
    assert (await backend.get_trace(conversation.id)).model_dump() == trace_before
    assert (await backend.explain_step(first.id)).model_dump() == explanation_before
    assert ids((await backend.explain_step(first.id)).tool_calls) == [call.id]
    assert first.id in ids((await backend.get_provenance(paris.id)).steps)


async def test_search_works_after_reopen(persistent_harness: BackendHarness) -> None:
    backend = persistent_harness.backend
    conversation = await backend.create_conversation(user_id="u")
    for text in ("The harbour was full of sailboats", "We ate sardines", "Sailing is fun"):
        await backend.add_message(conversation.id, "user", text)
    await backend.add_entity("Sailboat", "vehicle", "A boat moved by sails")
    await backend.add_entity("Sardine", "animal", "A small fish")
    modes = supported_modes(backend)
    messages_before = {
        mode: ids((await backend.search_messages(conversation.id, "sailboats", mode=mode)).items)
        for mode, _ in modes
    }
    entities_before = {
        mode: ids((await backend.search_entities("boat", mode=mode)).items) for mode, _ in modes
    }
    assert all(messages_before.values())

    backend = await persistent_harness.reopen()

    for mode, expected in modes:
        result = await backend.search_messages(conversation.id, "sailboats", mode=mode)
        assert result.search_type == expected
        assert ids(result.items) == messages_before[mode], mode
        entities = await backend.search_entities("boat", mode=mode)
        assert ids(entities.items) == entities_before[mode], mode
    later = await backend.add_message(conversation.id, "user", "Another sailboats sighting")
    found = await backend.search_messages(conversation.id, "sailboats", limit=50)
    assert later.id in ids(found.items)


async def test_workspaces_survive_reopen(persistent_harness: BackendHarness) -> None:
    mine = await persistent_harness.backend.create_conversation(user_id="u")
    theirs = await persistent_harness.other_workspace().create_conversation(user_id="u")
    their_entity = await persistent_harness.other_workspace().add_entity("Zed", "person")

    await persistent_harness.reopen()

    other = persistent_harness.other_workspace()
    assert ids(await persistent_harness.backend.list_conversations()) == [mine.id]
    assert ids(await other.list_conversations()) == [theirs.id]
    assert ids(await other.list_entities()) == [their_entity.id]
    assert await persistent_harness.backend.list_entities() == []
