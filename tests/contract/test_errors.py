"""Refused input (``InvalidInputError``, nothing written) and unknown ids (``NotFoundError``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from nams_local.backend import MAX_BULK_MESSAGES, Capabilities, MemoryBackend
from nams_local.errors import InvalidInputError, NotFoundError, NotSupportedError
from nams_local.models import Conversation, Entity, NewMessage, ReasoningStep

from .support import UNKNOWN_ID, UNKNOWN_ID_2, graph_snapshot, ids, rels

# -- invalid input -----------------------------------------------------------------------


async def test_invalid_role_is_refused(backend: MemoryBackend) -> None:
    conversation = await backend.create_conversation()

    with pytest.raises(InvalidInputError):
        await backend.add_message(conversation.id, "bot", "hello")

    assert await backend.list_messages(conversation.id) == []


@pytest.mark.parametrize("content", ["", "   ", "\n\t "], ids=["empty", "spaces", "whitespace"])
async def test_blank_content_is_refused(backend: MemoryBackend, content: str) -> None:
    conversation = await backend.create_conversation()

    with pytest.raises(InvalidInputError):
        await backend.add_message(conversation.id, "user", content)

    assert await backend.list_messages(conversation.id) == []


async def test_bulk_over_the_limit_is_refused(backend: MemoryBackend) -> None:
    conversation = await backend.create_conversation()
    batch = [NewMessage(role="user", content=f"m{i}") for i in range(MAX_BULK_MESSAGES + 1)]

    with pytest.raises(InvalidInputError):
        await backend.add_messages(conversation.id, batch)

    assert await backend.list_messages(conversation.id, limit=200) == []
    (listed,) = [c for c in await backend.list_conversations() if c.id == conversation.id]
    assert listed.message_count == 0


@pytest.mark.parametrize("position", [0, 4, 9], ids=["first", "middle", "last"])
@pytest.mark.parametrize(
    "bad", [NewMessage(role="bot", content="x"), NewMessage(role="user", content="  ")]
)
async def test_bulk_with_one_invalid_message_writes_nothing(
    backend: MemoryBackend, position: int, bad: NewMessage
) -> None:
    conversation = await backend.create_conversation()
    batch = [NewMessage(role="user", content=f"valid message {i}") for i in range(10)]
    batch[position] = bad

    with pytest.raises(InvalidInputError):
        await backend.add_messages(conversation.id, batch)

    assert await backend.list_messages(conversation.id, limit=200) == []
    result = await backend.search_messages(conversation.id, "valid message", limit=50)
    assert result.items == []


@pytest.mark.parametrize("limit", [0, -1, 201])
async def test_list_messages_limit_out_of_range(backend: MemoryBackend, limit: int) -> None:
    conversation = await backend.create_conversation()
    await backend.add_message(conversation.id, "user", "hello")

    with pytest.raises(InvalidInputError):
        await backend.list_messages(conversation.id, limit=limit)


@pytest.mark.parametrize("limit", [0, -1, 201])
async def test_list_conversations_limit_out_of_range(backend: MemoryBackend, limit: int) -> None:
    await backend.create_conversation()

    with pytest.raises(InvalidInputError):
        await backend.list_conversations(limit=limit)


@pytest.mark.parametrize("limit", [0, 201])
async def test_list_observations_limit_out_of_range(backend: MemoryBackend, limit: int) -> None:
    conversation = await backend.create_conversation()

    with pytest.raises(InvalidInputError):
        await backend.list_observations(conversation.id, limit=limit)


@pytest.mark.parametrize("limit", [0, -1, 201])
async def test_search_limit_out_of_range(backend: MemoryBackend, limit: int) -> None:
    conversation = await backend.create_conversation()
    await backend.add_message(conversation.id, "user", "searchable words")
    await backend.add_entity("Searchable", "concept")

    with pytest.raises(InvalidInputError):
        await backend.search_messages(conversation.id, "searchable", limit=limit)
    with pytest.raises(InvalidInputError):
        await backend.search_entities("searchable", limit=limit)


async def test_empty_search_query_is_refused(backend: MemoryBackend) -> None:
    conversation = await backend.create_conversation()
    await backend.add_message(conversation.id, "user", "some words")
    await backend.add_entity("Something", "concept")

    with pytest.raises(InvalidInputError):
        await backend.search_messages(conversation.id, "")
    with pytest.raises(InvalidInputError):
        await backend.search_entities("")


@pytest.mark.parametrize("score", [-0.1, 1.5])
async def test_feedback_score_out_of_range(backend: MemoryBackend, score: float) -> None:
    entity = await backend.add_entity("Feedback Target", "concept", "unchanged")
    before = (await backend.get_entity(entity.id)).model_dump()

    with pytest.raises(InvalidInputError):
        await backend.entity_feedback(entity.id, user_score=score)

    assert (await backend.get_entity(entity.id)).model_dump() == before


@pytest.mark.parametrize(
    ("name", "type"), [("", "person"), ("Somebody", ""), ("", "")], ids=["name", "type", "both"]
)
async def test_empty_entity_name_or_type_is_refused(
    backend: MemoryBackend, name: str, type: str
) -> None:
    with pytest.raises(InvalidInputError):
        await backend.add_entity(name, type)

    assert await backend.list_entities() == []
    assert (await backend.get_graph()).nodes == []


async def test_self_merge_is_refused(backend: MemoryBackend) -> None:
    entity = await backend.add_entity("Narcissus", "person")

    with pytest.raises(InvalidInputError):
        await backend.merge_entities(entity.id, entity.id)

    assert ids(await backend.list_entities()) == [entity.id]
    assert rels(await backend.get_entity(entity.id)) == []


# -- unknown ids -------------------------------------------------------------------------


@dataclass
class World:
    """Real objects, so each call below has exactly one unknown id."""

    conversation: Conversation
    entity: Entity
    other_entity: Entity
    step: ReasoningStep


async def _world(backend: MemoryBackend) -> World:
    conversation = await backend.create_conversation(user_id="u")
    await backend.add_message(conversation.id, "user", "hello there, nice weather today")
    entity = await backend.add_entity("Alice", "person")
    other_entity = await backend.add_entity("Bob", "person")
    step = await backend.record_step(conversation.id, "who is Alice?", "look up")
    return World(conversation, entity, other_entity, step)


Call = Callable[[MemoryBackend, World], Awaitable[Any]]

#: (name, call, capability flag the call needs or None).
NOT_FOUND_CASES: list[tuple[str, Call, str | None]] = [
    ("get_conversation", lambda b, w: b.get_conversation(UNKNOWN_ID), None),
    ("add_message", lambda b, w: b.add_message(UNKNOWN_ID, "user", "hi"), None),
    (
        "add_messages",
        lambda b, w: b.add_messages(UNKNOWN_ID, [NewMessage(role="user", content="hi")]),
        None,
    ),
    ("list_messages", lambda b, w: b.list_messages(UNKNOWN_ID), None),
    ("search_messages", lambda b, w: b.search_messages(UNKNOWN_ID, "hi"), None),
    ("get_context", lambda b, w: b.get_context(UNKNOWN_ID), None),
    ("list_observations", lambda b, w: b.list_observations(UNKNOWN_ID), None),
    ("list_reflections", lambda b, w: b.list_reflections(UNKNOWN_ID), None),
    ("get_extraction_status", lambda b, w: b.get_extraction_status(UNKNOWN_ID), None),
    ("get_entity", lambda b, w: b.get_entity(UNKNOWN_ID), None),
    ("update_entity", lambda b, w: b.update_entity(UNKNOWN_ID, name="New"), None),
    ("entity_feedback", lambda b, w: b.entity_feedback(UNKNOWN_ID, user_score=0.5), None),
    ("get_entity_history", lambda b, w: b.get_entity_history(UNKNOWN_ID), None),
    ("get_provenance", lambda b, w: b.get_provenance(UNKNOWN_ID), None),
    ("merge_unknown_source", lambda b, w: b.merge_entities(UNKNOWN_ID, w.entity.id), None),
    ("merge_unknown_target", lambda b, w: b.merge_entities(w.entity.id, UNKNOWN_ID), None),
    ("merge_both_unknown", lambda b, w: b.merge_entities(UNKNOWN_ID, UNKNOWN_ID_2), None),
    ("record_step", lambda b, w: b.record_step(UNKNOWN_ID, "why", "what"), None),
    ("list_steps", lambda b, w: b.list_steps(UNKNOWN_ID), None),
    (
        "record_tool_call",
        lambda b, w: b.record_tool_call("tool", "{}", step_id=UNKNOWN_ID),
        None,
    ),
    ("get_trace", lambda b, w: b.get_trace(UNKNOWN_ID), None),
    ("explain_step", lambda b, w: b.explain_step(UNKNOWN_ID), None),
    (
        "add_relationship_unknown_source",
        lambda b, w: b.add_relationship(UNKNOWN_ID, w.entity.id, "KNOWS"),
        "relationship_writes",
    ),
    (
        "add_relationship_unknown_target",
        lambda b, w: b.add_relationship(w.entity.id, UNKNOWN_ID, "KNOWS"),
        "relationship_writes",
    ),
    (
        "entity_neighbourhood",
        lambda b, w: b.entity_neighbourhood(UNKNOWN_ID),
        "graph_neighbourhood",
    ),
]


def _expected(backend: MemoryBackend, capability: str | None) -> type[Exception]:
    if capability is None:
        return NotFoundError
    assert capability in Capabilities.__dataclass_fields__
    return NotFoundError if getattr(backend.capabilities, capability) else NotSupportedError


@pytest.mark.parametrize(
    ("call", "capability"),
    [pytest.param(call, cap, id=name) for name, call, cap in NOT_FOUND_CASES],
)
async def test_unknown_id_is_not_found(
    backend: MemoryBackend, call: Call, capability: str | None
) -> None:
    world = await _world(backend)
    before = await _snapshot(backend, world)

    with pytest.raises(_expected(backend, capability)):
        await call(backend, world)

    assert await _snapshot(backend, world) == before


async def _snapshot(backend: MemoryBackend, world: World) -> dict[str, Any]:
    """Everything the failed call could have touched, read back through the protocol."""
    return {
        "conversations": [c.model_dump() for c in await backend.list_conversations()],
        "messages": [m.model_dump() for m in await backend.list_messages(world.conversation.id)],
        "entities": sorted(
            (e.model_dump() for e in await backend.list_entities()), key=lambda e: e["id"]
        ),
        "entity": (await backend.get_entity(world.entity.id)).model_dump(),
        "other_entity": (await backend.get_entity(world.other_entity.id)).model_dump(),
        "graph": await graph_snapshot(backend),
        "trace": (await backend.get_trace(world.conversation.id)).model_dump(),
    }


async def test_unknown_entity_by_name_is_none(backend: MemoryBackend) -> None:
    await backend.add_entity("Alice", "person")

    if not backend.capabilities.entity_by_name:
        with pytest.raises(NotSupportedError):
            await backend.get_entity_by_name("Nobody")
        return
    assert await backend.get_entity_by_name("Nobody") is None


# -- protocol and capabilities -----------------------------------------------------------


async def test_backend_satisfies_the_protocol(backend: MemoryBackend) -> None:
    assert isinstance(backend, MemoryBackend)
    assert isinstance(backend.capabilities, Capabilities)


async def test_query_is_read_only_or_not_supported(backend: MemoryBackend) -> None:
    alice = await backend.add_entity("Alice", "person")

    if not backend.capabilities.cypher_query:
        with pytest.raises(NotSupportedError):
            await backend.query("MATCH (n) RETURN n LIMIT 1")
        return
    with pytest.raises(InvalidInputError):
        await backend.query("CREATE (n:Intruder {name: 'x'}) RETURN n")
    assert ids(await backend.list_entities()) == [alice.id]
