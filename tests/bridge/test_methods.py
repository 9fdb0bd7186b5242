"""Every bridge method over HTTP, table-driven: the happy shape, and what a miss answers.

``CASES`` holds one row per method (all 48): how to build its body (creating what it needs
through other bridge calls first) and how to check the reply's shape. ``MISSES`` holds the
contract's unknown-id table (§4.6): which misses are empty answers and which are 404s.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from nams_local.bridge import METHODS, PROTOCOL_VERSION

from .support import (
    UNKNOWN_ID,
    Bridge,
    check_conversation,
    check_entity,
    check_message,
    check_timestamp,
    check_tool_call,
    check_trace,
    is_uuid,
)

Body = Callable[[Bridge], Awaitable[dict[str, Any]]]
Check = Callable[[Any], None]


async def _entity(b: Bridge, name: str = "Alice Johnson", type_: str = "PERSON") -> str:
    created = await b.ok("add_entity", name=name, entity_type=type_)
    return str(created["id"])


async def _conversation(b: Bridge) -> str:
    created = await b.ok("create_conversation", user_id="alice")
    await b.ok("add_message", session_id=created["id"], role="user", content="Alice Johnson here")
    return str(created["id"])


async def _trace(b: Bridge) -> str:
    return str((await b.ok("start_trace", session_id="s1", task="Find Alice's employer"))["id"])


async def _trace_step(b: Bridge) -> str:
    return str((await b.ok("add_step", trace_id=await _trace(b), thought="look up"))["id"])


async def _agent_step(b: Bridge) -> str:
    conv = await _conversation(b)
    step = await b.ok(
        "record_step", conversation_id=conv, reasoning="Ask about Alice Johnson", action_taken="x"
    )
    return str(step["id"])


def _list_of(check: Check, *, empty_ok: bool = False) -> Check:
    def run(value: Any) -> None:
        assert isinstance(value, list) and (empty_ok or value), value
        for item in value:
            check(item)

    return run


def _all(*checks: Check) -> Check:
    def run(value: Any) -> None:
        for check in checks:
            check(value)

    return run


def _keys(**kinds: type | tuple[type, ...]) -> Check:
    def run(value: Any) -> None:
        assert isinstance(value, dict), value
        for key, kind in kinds.items():
            assert isinstance(value[key], kind), (key, value)

    return run


def _setup(value: Any) -> None:
    assert value == {"ok": True, "protocol_version": PROTOCOL_VERSION}


def _session_info(value: Any) -> None:
    _keys(session_id=str, message_count=int)(value)
    check_timestamp(value["created_at"])


def _preference(value: Any) -> None:
    _keys(id=str, category=str, preference=str)(value)
    assert is_uuid(value["id"])


def _fact(value: Any) -> None:
    _keys(id=str, subject=str, predicate=str, object=str)(value)


def _relationship(value: Any) -> None:
    _keys(id=str, source_id=str, target_id=str, relationship_type=str, properties=dict)(value)
    assert all(is_uuid(value[k]) for k in ("id", "source_id", "target_id"))


def _step(value: Any) -> None:
    _keys(id=str, trace_id=str, step_number=int, tool_calls=list)(value)
    assert value["step_number"] == 1


def _stats(value: Any) -> None:
    _keys(name=str, total_calls=int, successful_calls=int, failed_calls=int)(value)
    assert 0.0 <= value["success_rate"] <= 1.0


def _agent_step_shape(value: Any) -> None:
    _keys(id=str, conversation_id=str, reasoning=str, action_taken=str)(value)
    assert is_uuid(value["conversation_id"])
    check_timestamp(value["created_at"])


def _explanation(value: Any) -> None:
    _agent_step_shape(value)
    _keys(tool_calls=list, influenced_entities=list)(value)
    assert [e["name"] for e in value["influenced_entities"]] == ["Alice Johnson"]
    for e in value["influenced_entities"]:
        check_entity(e)


def _context(value: Any) -> None:
    _keys(reflections=list, observations=list, recent_messages=list)(value)
    assert [m["content"] for m in value["recent_messages"]] == ["Alice Johnson here"]


def _graph(value: Any) -> None:
    _keys(nodes=list, edges=list)(value)
    ids = {n["id"] for n in value["nodes"]}
    assert ids and all(e["source"] in ids and e["target"] in ids for e in value["edges"])


def _history(value: Any) -> None:
    _keys(entity_id=str, mentions=list)(value)
    (mention,) = value["mentions"]
    assert is_uuid(mention["conversation_id"]) and is_uuid(mention["message_id"])
    check_timestamp(mention["timestamp"])


def _cypher(value: Any) -> None:
    assert value["columns"] == ["total"] and value["rows"] == [[1]]


@dataclass(frozen=True)
class Case:
    body: Body
    #: ``None``: the method answers 204 with no body.
    check: Check | None


async def _no_body(b: Bridge) -> dict[str, Any]:
    return {}


async def _session_with_message(b: Bridge) -> dict[str, Any]:
    await b.ok("add_message", session_id="s1", role="user", content="Python is fun")
    return {"session_id": "s1"}


async def _message_id(b: Bridge) -> dict[str, Any]:
    m = await b.ok("add_message", session_id="s1", role="user", content="bye")
    return {"message_id": m["id"]}


async def _related(b: Bridge) -> dict[str, Any]:
    alice, acme = await _entity(b), await _entity(b, "Acme Corp", "ORGANIZATION")
    await b.ok("add_relationship", source_id=alice, target_id=acme, relationship_type="WORKS_AT")
    return {"entity_id": alice, "depth": 1}


async def _two_entities(b: Bridge) -> dict[str, Any]:
    return {"source_id": await _entity(b, "A. Johnson"), "target_id": await _entity(b)}


async def _tool_call(b: Bridge) -> dict[str, Any]:
    return {"step_id": await _trace_step(b), "tool_name": "search", "arguments": {"q": 1}}


async def _stats_body(b: Bridge) -> dict[str, Any]:
    await b.ok("record_tool_call", **await _tool_call(b))
    return {"tool_name": "search"}


async def _completed_trace(b: Bridge) -> dict[str, Any]:
    trace = await _trace(b)
    await b.ok("complete_trace", trace_id=trace, outcome="done", success=True)
    return {"task": "Alice employer", "limit": 5, "success_only": True}


async def _with_conversation(b: Bridge) -> dict[str, Any]:
    return {"conversation_id": await _conversation(b)}


async def _with_entity(b: Bridge) -> dict[str, Any]:
    return {"entity_id": await _entity(b)}


async def _mentioned_entity(b: Bridge) -> dict[str, Any]:
    await _conversation(b)
    return {"entity_id": await _entity(b)}


async def _influenced_entity(b: Bridge) -> dict[str, Any]:
    entity = await _entity(b)
    await _agent_step(b)
    return {"entity_id": entity}


def _body(**fixed: Any) -> Body:
    async def build(b: Bridge) -> dict[str, Any]:
        return dict(fixed)

    return build


def _plus(build: Body, **extra: Any) -> Body:
    async def run(b: Bridge) -> dict[str, Any]:
        return {**await build(b), **extra}

    return run


async def _trace_body(b: Bridge) -> dict[str, Any]:
    return {"trace_id": await _trace(b)}


async def _step_body(b: Bridge) -> dict[str, Any]:
    await _entity(b)  # named in the step's reasoning: an influenced entity
    return {"step_id": await _agent_step(b)}


def _explained(value: Any) -> None:
    (step,) = value["steps"]
    _explanation(step)


CASES: dict[str, Case] = {
    # lifecycle
    "setup": Case(_no_body, _setup),
    "teardown": Case(_no_body, None),
    "clear_all_data": Case(_no_body, None),
    # Bronze
    "add_message": Case(
        _body(session_id="s1", role="user", content="hi", metadata={"n": 1}), check_message
    ),
    "get_conversation": Case(_session_with_message, check_conversation),
    "search_messages": Case(
        _plus(_session_with_message, query="python", limit=10, threshold=0.0),
        _list_of(check_message),
    ),
    "list_sessions": Case(_plus(_session_with_message, limit=100), _list_of(_session_info)),
    "delete_message": Case(_message_id, lambda v: _keys(deleted=bool)(v)),
    "clear_session": Case(_session_with_message, None),
    # Silver long-term
    "add_entity": Case(_body(name="Alice", entity_type="person"), check_entity),
    "add_preference": Case(_body(category="food", preference="Likes pizza"), _preference),
    "add_fact": Case(_body(subject="Alice", predicate="WORKS_AT", obj="Acme"), _fact),
    "search_entities": Case(
        _plus(_with_entity, query="Alice Johnson", limit=10), _list_of(check_entity)
    ),
    "search_preferences": Case(
        lambda b: _plus(_body(query="pizza", limit=10))(b), _list_of(_preference, empty_ok=True)
    ),
    "get_entity_by_name": Case(
        _plus(_with_entity, name="Alice Johnson"), lambda v: check_entity(v)
    ),
    "get_related_entities": Case(_related, _list_of(check_entity)),
    # Silver reasoning
    "start_trace": Case(_body(session_id="s1", task="Find Alice"), check_trace),
    "add_step": Case(_plus(_trace_body, thought="t"), _step),
    "record_tool_call": Case(_plus(_tool_call, status="timeout", duration_ms=5), check_tool_call),
    "complete_trace": Case(_plus(_trace_body, success=False), check_trace),
    "get_trace_with_steps": Case(_trace_body, check_trace),
    "list_traces": Case(_plus(_trace_body, limit=100), _list_of(check_trace)),
    "get_tool_stats": Case(_stats_body, _list_of(_stats)),
    # Gold
    "add_relationship": Case(
        _plus(_two_entities, relationship_type="KNOWS", properties={"since": 2020}),
        _relationship,
    ),
    "merge_duplicate_entities": Case(_plus(_two_entities, canonical_name="AJ"), check_entity),
    "get_similar_traces": Case(_completed_trace, _list_of(check_trace)),
    # Platinum: conversations
    "create_conversation": Case(_body(user_id="alice", metadata={"a": [1]}), check_conversation),
    "list_conversations": Case(_plus(_with_conversation, limit=10), _list_of(check_conversation)),
    "get_conversation_metadata": Case(_with_conversation, check_conversation),
    "delete_conversation": Case(_with_conversation, None),
    "get_context": Case(_with_conversation, _context),
    "bulk_add_messages": Case(
        _plus(_with_conversation, messages=[{"role": "user", "content": "x"}]),
        _list_of(check_message),
    ),
    "get_observations": Case(_with_conversation, _list_of(lambda o: None, empty_ok=True)),
    "get_reflections": Case(_with_conversation, _list_of(lambda r: None, empty_ok=True)),
    # Platinum: entity graph
    "list_entities": Case(_plus(_with_entity, type="person", limit=5), _list_of(check_entity)),
    "get_entity": Case(_with_entity, check_entity),
    "update_entity": Case(_plus(_with_entity, description="Engineer"), check_entity),
    "delete_entity": Case(_with_entity, None),
    "set_entity_feedback": Case(
        _plus(_with_entity, user_score=0.0, confirmed=False),
        lambda v: _keys(id=str, updated=bool)(v),
    ),
    "get_entity_history": Case(_mentioned_entity, _history),
    "merge_entities": Case(
        _two_entities, lambda v: _keys(source_id=str, target_id=str, status=str)(v)
    ),
    "get_entity_graph": Case(_plus(_related), _graph),
    # Platinum: reasoning provenance and query
    "record_step": Case(
        _plus(_with_conversation, reasoning="r", action_taken="a", result="ok"),
        _agent_step_shape,
    ),
    "list_steps": Case(_plus(_with_conversation), _list_of(_agent_step_shape, empty_ok=True)),
    "explain_step": Case(_step_body, _explanation),
    "get_trace_by_conversation": Case(
        _with_conversation, _keys(conversation_id=str, steps=list, tool_calls=list)
    ),
    "get_entity_provenance": Case(
        _influenced_entity, _all(_keys(entity_id=str, steps=list), _explained)
    ),
    "cypher_query": Case(
        _plus(_with_entity, cypher="MATCH (n) RETURN count(n) AS total LIMIT 1", params={}),
        _cypher,
    ),
}


def test_the_table_covers_all_48_methods() -> None:
    assert len(METHODS) == 48
    assert set(CASES) == set(METHODS)


@pytest.mark.parametrize("method", sorted(CASES))
async def test_method_answers_its_documented_shape(bridge: Bridge, method: str) -> None:
    case = CASES[method]
    body = await case.body(bridge)
    if case.check is None:
        await bridge.void(method, **body)
    else:
        case.check(await bridge.ok(method, **body))


#: §4.6: what an unknown id answers. ``(body, status, expected JSON or None for 204)``;
#: expected ``...`` means "any 404 error body".
MISSES: dict[str, tuple[dict[str, Any], int, Any]] = {
    "get_entity_by_name": ({"name": "Nobody"}, 200, None),
    "get_trace_with_steps": ({"trace_id": UNKNOWN_ID}, 200, None),
    "delete_message": ({"message_id": UNKNOWN_ID}, 200, {"deleted": False}),
    "clear_session": ({"session_id": "never-used"}, 204, None),
    "delete_conversation": ({"conversation_id": UNKNOWN_ID}, 204, None),
    "delete_entity": ({"entity_id": UNKNOWN_ID}, 204, None),
    "get_related_entities": ({"entity_id": UNKNOWN_ID, "depth": 1}, 200, []),
    "list_steps": ({"conversation_id": UNKNOWN_ID}, 200, []),
    "get_context": (
        {"conversation_id": UNKNOWN_ID},
        200,
        {"reflections": [], "observations": [], "recent_messages": []},
    ),
    "get_trace_by_conversation": (
        {"conversation_id": UNKNOWN_ID},
        200,
        {"conversation_id": UNKNOWN_ID, "steps": [], "tool_calls": []},
    ),
    "get_entity_provenance": (
        {"entity_id": UNKNOWN_ID},
        200,
        {"entity_id": UNKNOWN_ID, "steps": []},
    ),
    "get_tool_stats": ({"tool_name": "no-such-tool"}, 200, []),
    "add_step": ({"trace_id": UNKNOWN_ID}, 404, ...),
    "record_tool_call": ({"step_id": UNKNOWN_ID, "tool_name": "t", "arguments": {}}, 404, ...),
    "complete_trace": ({"trace_id": UNKNOWN_ID}, 404, ...),
    "add_relationship": (
        {"source_id": UNKNOWN_ID, "target_id": UNKNOWN_ID[:-1] + "1", "relationship_type": "K"},
        404,
        ...,
    ),
    "merge_duplicate_entities": (
        {"source_id": UNKNOWN_ID, "target_id": UNKNOWN_ID[:-1] + "1"},
        404,
        ...,
    ),
    "merge_entities": ({"source_id": UNKNOWN_ID, "target_id": UNKNOWN_ID[:-1] + "1"}, 404, ...),
    "get_conversation_metadata": ({"conversation_id": UNKNOWN_ID}, 404, ...),
    "get_entity": ({"entity_id": UNKNOWN_ID}, 404, ...),
    "update_entity": ({"entity_id": UNKNOWN_ID, "name": "X"}, 404, ...),
    "set_entity_feedback": (
        {"entity_id": UNKNOWN_ID, "user_score": 0.5, "confirmed": True},
        404,
        ...,
    ),
    "get_entity_history": ({"entity_id": UNKNOWN_ID}, 404, ...),
    "bulk_add_messages": (
        {"conversation_id": UNKNOWN_ID, "messages": [{"role": "user", "content": "x"}]},
        404,
        ...,
    ),
    "get_observations": ({"conversation_id": UNKNOWN_ID}, 404, ...),
    "get_reflections": ({"conversation_id": UNKNOWN_ID}, 404, ...),
    "record_step": (
        {"conversation_id": UNKNOWN_ID, "reasoning": "r", "action_taken": "a"},
        404,
        ...,
    ),
    "explain_step": ({"step_id": UNKNOWN_ID}, 404, ...),
}


@pytest.mark.parametrize("method", sorted(MISSES))
async def test_unknown_ids_answer_as_the_contract_lists(bridge: Bridge, method: str) -> None:
    body, status, expected = MISSES[method]
    if status == 204:
        await bridge.void(method, **body)
    elif status == 404:
        await bridge.error(method, 404, **body)
    else:
        assert await bridge.ok(method, **body) == expected


#: After ``clear_all_data`` every list and search answers ``[]``.
EMPTY_AFTER_CLEAR: dict[str, dict[str, Any]] = {
    "list_sessions": {"limit": 100},
    "list_traces": {"limit": 100},
    "get_tool_stats": {},
    "search_messages": {"query": "Python", "limit": 10, "threshold": 0.0},
    "search_entities": {"query": "Alice Johnson", "limit": 10},
    "search_preferences": {"query": "pizza", "limit": 10},
    "get_similar_traces": {"task": "Find Alice's employer", "limit": 5, "success_only": False},
    "list_conversations": {},
    "list_entities": {},
}


@pytest.mark.parametrize("method", sorted(EMPTY_AFTER_CLEAR))
async def test_every_list_is_empty_after_clear_all_data(bridge: Bridge, method: str) -> None:
    await _session_with_message(bridge)
    await bridge.ok("add_message", session_id="s2", role="user", content="Python again")
    await bridge.ok("add_preference", category="food", preference="Likes pizza")
    await bridge.ok("record_tool_call", **await _tool_call(bridge))
    await _related(bridge)
    await _agent_step(bridge)
    before = await bridge.ok(method, **EMPTY_AFTER_CLEAR[method])
    assert before, f"{method} found nothing to clear"
    await bridge.void("clear_all_data")
    assert await bridge.ok(method, **EMPTY_AFTER_CLEAR[method]) == []
