"""Workspace isolation: another workspace on the same store sees and touches nothing."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from nams_local.backend import MemoryBackend
from nams_local.errors import NotFoundError, NotSupportedError
from nams_local.models import Conversation, Entity, NewMessage, ReasoningStep, Relationship

from .harnesses import BackendHarness
from .support import graph_snapshot, ids, relate, supported_modes


@dataclass
class FirstWorkspace:
    conversation: Conversation
    alice: Entity
    acme: Entity
    step: ReasoningStep
    relationship: Relationship | None


async def _populate(backend: MemoryBackend) -> FirstWorkspace:
    alice = await backend.add_entity("Alice", "person", "An engineer")
    acme = await backend.add_entity("Acme", "organization", "A company")
    conversation = await backend.create_conversation(user_id="shared-user", metadata={"k": "v"})
    await backend.add_message(conversation.id, "user", "Alice joined Acme as an engineer")
    await backend.add_message(conversation.id, "assistant", "Acme is lucky to have Alice")
    relationship = await relate(backend, alice, acme, "WORKS_AT")
    step = await backend.record_step(conversation.id, "Alice works at Acme", "remember")
    await backend.record_tool_call("memo", '{"who": "Alice"}', step_id=step.id)
    return FirstWorkspace(conversation, alice, acme, step, relationship)


async def _snapshot(backend: MemoryBackend, first: FirstWorkspace) -> dict[str, Any]:
    """The first workspace's data, read back through the protocol."""
    conversation_id = first.conversation.id
    return {
        "conversations": [c.model_dump() for c in await backend.list_conversations()],
        "conversation": (await backend.get_conversation(conversation_id)).model_dump(),
        "messages": [m.model_dump() for m in await backend.list_messages(conversation_id)],
        "entities": sorted(
            (e.model_dump() for e in await backend.list_entities()), key=lambda e: e["id"]
        ),
        "alice": (await backend.get_entity(first.alice.id)).model_dump(),
        "acme": (await backend.get_entity(first.acme.id)).model_dump(),
        "graph": await graph_snapshot(backend),
        "trace": (await backend.get_trace(conversation_id)).model_dump(),
        "history": (await backend.get_entity_history(first.alice.id)).model_dump(),
        "search": [
            m.id for m in (await backend.search_messages(conversation_id, "Alice", 50)).items
        ],
    }


async def test_second_workspace_starts_empty(harness: BackendHarness) -> None:
    first = await _populate(harness.backend)
    other = harness.other_workspace()

    assert await other.list_conversations() == []
    assert await other.list_conversations(user_id="shared-user") == []
    assert await other.list_entities() == []
    assert await other.list_entities(type="person") == []
    graph = await other.get_graph()
    assert (graph.nodes, graph.edges) == ([], [])
    for mode, _ in supported_modes(other):
        assert (await other.search_entities("Alice", mode=mode)).items == []
        assert (await other.search_entities("Acme", mode=mode)).items == []
    if other.capabilities.user_message_search:
        assert await other.search_user_messages("shared-user", "Alice") == []
    else:
        with pytest.raises(NotSupportedError):
            await other.search_user_messages("shared-user", "Alice")
    if other.capabilities.entity_by_name:
        assert await other.get_entity_by_name("Alice") is None
    else:
        with pytest.raises(NotSupportedError):
            await other.get_entity_by_name("Alice")
    # ... while the first workspace still sees its own data.
    assert ids(await harness.backend.list_conversations()) == [first.conversation.id]


async def test_workspaces_report_different_ids(harness: BackendHarness) -> None:
    mine = await harness.backend.create_conversation(user_id="u")
    other = harness.other_workspace()
    theirs = await other.create_conversation(user_id="u")

    mine_read = await harness.backend.get_conversation(mine.id)
    theirs_read = await other.get_conversation(theirs.id)

    assert mine_read.workspace_id
    assert theirs_read.workspace_id
    assert mine_read.workspace_id != theirs_read.workspace_id
    assert ids(await harness.backend.list_conversations()) == [mine.id]
    assert ids(await other.list_conversations()) == [theirs.id]


Call = Callable[[MemoryBackend, FirstWorkspace], Awaitable[Any]]

#: Calls from the second workspace on the first workspace's ids; (name, call, capability).
FOREIGN_CALLS: list[tuple[str, Call, str | None]] = [
    ("get_conversation", lambda o, f: o.get_conversation(f.conversation.id), None),
    ("add_message", lambda o, f: o.add_message(f.conversation.id, "user", "intruder"), None),
    (
        "add_messages",
        lambda o, f: o.add_messages(f.conversation.id, [NewMessage(role="user", content="x")]),
        None,
    ),
    ("list_messages", lambda o, f: o.list_messages(f.conversation.id), None),
    ("search_messages", lambda o, f: o.search_messages(f.conversation.id, "Alice"), None),
    ("get_context", lambda o, f: o.get_context(f.conversation.id), None),
    ("list_observations", lambda o, f: o.list_observations(f.conversation.id), None),
    ("list_reflections", lambda o, f: o.list_reflections(f.conversation.id), None),
    ("get_extraction_status", lambda o, f: o.get_extraction_status(f.conversation.id), None),
    ("get_entity", lambda o, f: o.get_entity(f.alice.id), None),
    ("update_entity", lambda o, f: o.update_entity(f.alice.id, name="Mallory"), None),
    ("entity_feedback", lambda o, f: o.entity_feedback(f.alice.id, user_score=0.1), None),
    ("get_entity_history", lambda o, f: o.get_entity_history(f.alice.id), None),
    ("get_provenance", lambda o, f: o.get_provenance(f.alice.id), None),
    ("merge_entities", lambda o, f: o.merge_entities(f.alice.id, f.acme.id), None),
    ("record_step", lambda o, f: o.record_step(f.conversation.id, "sneaky", "write"), None),
    ("list_steps", lambda o, f: o.list_steps(f.conversation.id), None),
    (
        "record_tool_call",
        lambda o, f: o.record_tool_call("tool", "{}", step_id=f.step.id),
        None,
    ),
    ("get_trace", lambda o, f: o.get_trace(f.conversation.id), None),
    ("explain_step", lambda o, f: o.explain_step(f.step.id), None),
    (
        "add_relationship",
        lambda o, f: o.add_relationship(f.alice.id, f.acme.id, "KNOWS"),
        "relationship_writes",
    ),
    (
        "entity_neighbourhood",
        lambda o, f: o.entity_neighbourhood(f.alice.id),
        "graph_neighbourhood",
    ),
]


@pytest.mark.parametrize(
    ("call", "capability"),
    [pytest.param(call, cap, id=name) for name, call, cap in FOREIGN_CALLS],
)
async def test_foreign_ids_are_not_found_and_untouched(
    harness: BackendHarness, call: Call, capability: str | None
) -> None:
    first = await _populate(harness.backend)
    before = await _snapshot(harness.backend, first)
    other = harness.other_workspace()
    supported = capability is None or getattr(other.capabilities, capability)

    with pytest.raises(NotFoundError if supported else NotSupportedError):
        await call(other, first)

    assert await _snapshot(harness.backend, first) == before
    assert await other.list_conversations() == []
    assert await other.list_entities() == []


#: Deletes are idempotent (W2): a foreign id is "not here", so the call succeeds, and
#: nothing of the first workspace may change.
FOREIGN_DELETES: list[tuple[str, Call, str | None]] = [
    ("delete_conversation", lambda o, f: o.delete_conversation(f.conversation.id), None),
    ("delete_entity", lambda o, f: o.delete_entity(f.alice.id), None),
    (
        "delete_relationship",
        lambda o, f: o.delete_relationship(f.relationship.id if f.relationship else "x"),
        "relationship_writes",
    ),
]


@pytest.mark.parametrize(
    ("call", "capability"),
    [pytest.param(call, cap, id=name) for name, call, cap in FOREIGN_DELETES],
)
async def test_foreign_deletes_succeed_and_touch_nothing(
    harness: BackendHarness, call: Call, capability: str | None
) -> None:
    first = await _populate(harness.backend)
    before = await _snapshot(harness.backend, first)
    other = harness.other_workspace()

    if capability is None or getattr(other.capabilities, capability):
        await call(other, first)
    else:
        with pytest.raises(NotSupportedError):
            await call(other, first)

    assert await _snapshot(harness.backend, first) == before


async def test_merge_across_workspaces_is_not_found(harness: BackendHarness) -> None:
    first = await _populate(harness.backend)
    before = await _snapshot(harness.backend, first)
    other = harness.other_workspace()
    local = await other.add_entity("Alice", "person", "The other workspace's Alice")

    with pytest.raises(NotFoundError):
        await other.merge_entities(local.id, first.alice.id)
    with pytest.raises(NotFoundError):
        await other.merge_entities(first.alice.id, local.id)

    if other.capabilities.relationship_writes:
        with pytest.raises(NotFoundError):
            await other.add_relationship(local.id, first.alice.id, "KNOWS")
        with pytest.raises(NotFoundError):
            await other.add_relationship(first.alice.id, local.id, "KNOWS")
    assert ids(await other.list_entities()) == [local.id]
    assert (await other.get_entity(local.id)).relationships == []
    assert (await other.get_graph()).edges == []
    assert await _snapshot(harness.backend, first) == before


async def test_same_names_in_two_workspaces_stay_apart(harness: BackendHarness) -> None:
    first = await _populate(harness.backend)
    other = harness.other_workspace()
    their_alice = await other.add_entity("Alice", "person", "Another Alice")
    conversation = await other.create_conversation(user_id="shared-user")
    theirs = await other.add_message(conversation.id, "user", "Alice moved to Lisbon")

    history = await other.get_entity_history(their_alice.id)
    mine = await harness.backend.get_entity_history(first.alice.id)

    assert [m.message_id for m in history.mentions] == [theirs.id]
    assert theirs.id not in {m.message_id for m in mine.mentions}
    assert len(mine.mentions) == 2
    found = await other.search_entities("Alice")
    # Extraction may have added "Lisbon" to their workspace; never our Alice.
    assert ids(found.items)[0] == their_alice.id and first.alice.id not in ids(found.items)
    mine_found = await harness.backend.search_entities("Alice")
    assert their_alice.id not in ids(mine_found.items)
    assert first.alice.id in ids(mine_found.items)
    if other.capabilities.user_message_search:
        groups = await other.search_user_messages("shared-user", "Alice")
        assert [g.conversation_id for g in groups] == [conversation.id]
