"""No input to ``POST /bridge/{method}`` yields a 500, and a refused call changes nothing.

Every one of the 48 methods gets its valid body with one field at a time made hostile
(wrong JSON types, ``null``, a missing key, odd and huge strings, lone surrogates,
``NaN``/``Infinity``, huge integers, deep JSON, unknown ids), then raw non-object,
non-JSON and deeply nested bodies; a property test mixes it all at random. Each reply
must be below 500, an error must be a JSON object with a string ``error`` (the TCK client
reads ``body["error"]``), and after any 4xx every table of the bridge's store holds exactly
what it held before — so a refused call can neither write half of itself nor lose data.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends.sqlite import SQLiteBackend
from nams_local.bridge import create_bridge_app, open_bridge_backend
from nams_local.bridge.registry import METHODS
from nams_local.server import create_app
from tests.store_snapshot import Snapshot, snapshot

from .support import UNKNOWN_ID

#: A string no UTF-8 store can hold: valid JSON (``"\ud800"``), invalid Unicode text.
LONE_SURROGATE = "a\ud800b"

ODD_STRINGS: list[Any] = [
    "",
    " ",
    "\x00",
    "nul\x00byte",
    "ünïcødé — 😀 مرحبا \u202e",
    LONE_SURROGATE,
    "\udfff",
    "x" * 20_000,
    "'; DROP TABLE entities; --",
    '*"()^:NEAR AND OR NOT',
    "MATCH (n) DETACH DELETE n",
    UNKNOWN_ID,
    "%s %n {0} {{}}",
]
ODD_NUMBERS: list[Any] = [
    0,
    -1,
    2**31,
    2**63,
    10**30,
    -(10**30),
    1.5,
    1e308,
    float("nan"),
    float("inf"),
    float("-inf"),
]
WRONG_TYPES: list[Any] = [None, True, 5, 0.5, "5", [], {}, ["x"], {"x": "y"}]
DEEP: Any = {"a": [[[[{"b": [[[[{"c": None}]]]]}]]]]}
NESTED_ODD: list[Any] = [
    {"k": float("nan")},
    {"k": [float("inf")]},
    {"k": LONE_SURROGATE},
    {LONE_SURROGATE: 1},
    {"k": 10**30},
    DEEP,
]
RAW_BODIES = [
    b"null",
    b"[]",
    b"[{}]",
    b'"text"',
    b"0",
    b"{",
    b"\x00",
    b"\xc3\x28",
    b"{'a': 1}",
    b'{"a": NaN}',
    b'{"a": 1' + b"0" * 5000 + b"}",
    b"[" * 50_000 + b"]" * 50_000,
    b'{"a":' * 5000 + b"1" + b"}" * 5000,
]

#: Methods that empty or delete what they are pointed at, on purpose.
DESTRUCTIVE = {
    "clear_all_data",
    "clear_session",
    "delete_conversation",
    "delete_entity",
    "delete_message",
    "merge_entities",
    "merge_duplicate_entities",
}


@dataclass
class World:
    client: TestClient
    backend: SQLiteBackend
    ids: dict[str, str]


def _encode(body: Any) -> bytes:
    """JSON as a hostile client may send it: ``NaN``/``Infinity`` literals, ``\\ud800``."""
    return json.dumps(body, allow_nan=True).encode()


def _post(client: TestClient, method: str, body: bytes) -> Any:
    return client.post(
        f"/bridge/{method}", content=body, headers={"content-type": "application/json"}
    )


def _seed(client: TestClient) -> dict[str, str]:
    def ok(method: str, **body: Any) -> Any:
        response = client.post(f"/bridge/{method}", json=body)
        assert response.status_code == 200, (method, response.text)
        return response.json()

    message = ok("add_message", session_id="s1", role="user", content="Ann lives in Oslo")
    ann = ok("add_entity", name="Ann", entity_type="PERSON")
    oslo = ok("add_entity", name="Oslo", entity_type="LOCATION")
    ok("add_relationship", source_id=ann["id"], target_id=oslo["id"], relationship_type="IN")
    ok("add_preference", category="food", preference="likes tea")
    ok("add_fact", subject="Ann", predicate="likes", obj="tea")
    trace = ok("start_trace", session_id="s1", task="find Ann")
    step = ok("add_step", trace_id=trace["id"], thought="look up Ann")
    ok("record_tool_call", step_id=step["id"], tool_name="search", arguments={"q": "Ann"})
    conv = ok("create_conversation", user_id="u1", metadata={"k": "v"})
    ok(
        "bulk_add_messages",
        conversation_id=conv["id"],
        messages=[{"role": "user", "content": "hi"}],
    )
    agent_step = ok(
        "record_step", conversation_id=conv["id"], reasoning="Ann?", action_taken="recall"
    )
    return {
        "message": message["id"],
        "ann": ann["id"],
        "oslo": oslo["id"],
        "trace": trace["id"],
        "step": step["id"],
        "conv": conv["id"],
        "agent_step": agent_step["id"],
    }


@contextmanager
def open_world() -> Iterator[World]:
    """The server app with a seeded bridge over its own store, as ``create_app(bridge=...)``
    mounts it (built here so the test can read the bridge's store directly)."""
    backend = open_bridge_backend(":memory:")
    root = SQLiteBackend(":memory:", embeddings=False, extraction="off")
    app = create_app(root)
    app.mount("/bridge", create_bridge_app(backend))
    with TestClient(app) as client:
        yield World(client, backend, _seed(client))
    asyncio.run(backend.aclose())
    asyncio.run(root.aclose())


@pytest.fixture(scope="module")
def shared_world() -> Iterator[World]:
    """One world for the methods that delete nothing (a fresh one each costs time)."""
    with open_world() as world:
        yield world


@pytest.fixture
def world() -> Iterator[World]:
    with open_world() as world:
        yield world


def valid_body(method: str, ids: dict[str, str]) -> dict[str, Any]:
    """A body the method accepts, built from its field names and the seeded ids."""
    by_name: dict[str, Any] = {
        "session_id": "s1",
        "role": "user",
        "content": "hello",
        "metadata": {"k": "v"},
        "query": "Ann",
        "limit": 5,
        "threshold": 0.1,
        "message_id": ids["message"],
        "name": "Ann",
        "entity_type": "PERSON",
        "entity_id": ids["ann"],
        "source_id": ids["ann"],
        "target_id": ids["oslo"],
        "relationship_type": "KNOWS",
        "depth": 1,
        "trace_id": ids["trace"],
        "step_id": ids["step"],
        "arguments": {"q": "Ann"},
        "result": {"r": 1},
        "status": "success",
        "duration_ms": 5,
        "success": True,
        "success_only": True,
        "conversation_id": ids["conv"],
        "messages": [{"role": "user", "content": "more"}],
        "user_score": 0.5,
        "confirmed": True,
        "cypher": "MATCH (n) RETURN n.name AS name LIMIT 5",
        "params": {},
        "properties": {"since": 2020},
    }
    if method == "explain_step":
        by_name["step_id"] = ids["agent_step"]
    if method == "record_step":
        by_name["result"] = "found"
    fields = METHODS[method].body.model_fields
    return {name: by_name.get(name, "x") for name in fields}


def _odd_values(good: Any) -> list[Any]:
    """Odd values of the field's own JSON type (another type is one of ``WRONG_TYPES``)."""
    if isinstance(good, str):
        return ODD_STRINGS
    if isinstance(good, int | float):  # bool too: NaN and 0 must not pass as a flag
        return ODD_NUMBERS
    return NESTED_ODD


def _variants(method: str, ids: dict[str, str]) -> Iterator[dict[str, Any]]:
    """The valid body, then each field missing, wrong or odd (one field at a time)."""
    valid = valid_body(method, ids)
    yield valid
    yield {}
    yield {**valid, "unknown_key": DEEP}
    for name, good in valid.items():
        yield {k: v for k, v in valid.items() if k != name}
        for value in [*WRONG_TYPES, DEEP, *_odd_values(good)]:
            yield {**valid, name: value}
    if "messages" in valid:
        message = {"role": "user", "content": "m"}
        for bad in [*WRONG_TYPES, *NESTED_ODD]:
            yield {**valid, "messages": [{**message, "metadata": bad}]}
            yield {**valid, "messages": [{**message, "content": bad}]}
        yield {**valid, "messages": [message] * 101}
        yield {**valid, "messages": [message, {"role": "nobody", "content": "m"}]}
        yield {**valid, "messages": [[]]}


def check(world: World, method: str, body: bytes, before: Snapshot) -> Any:
    """Post ``body``; assert no 5xx, an ``error`` object on 4xx and no change on 4xx."""
    response = _post(world.client, method, body)
    label = (method, body[:160], response.status_code, response.text[:300])
    assert response.status_code < 500, label
    if response.status_code >= 400:
        payload = response.json()
        assert isinstance(payload, dict) and isinstance(payload.get("error"), str), label
        assert snapshot(world.backend) == before, ("a refused call changed the store", *label)
    return response


@pytest.mark.parametrize("method", sorted(METHODS))
def test_hostile_bodies_never_get_a_500_nor_change_data_when_refused(
    shared_world: World, method: str
) -> None:
    with ExitStack() as stack:
        # a destructive method gets a world of its own, so the others keep their ids
        world = stack.enter_context(open_world()) if method in DESTRUCTIVE else shared_world
        _throw_everything(world, method)


def _throw_everything(world: World, method: str) -> None:
    before = snapshot(world.backend)
    for body in _variants(method, world.ids):
        response = check(world, method, _encode(body), before)
        if response.status_code < 400:
            before = snapshot(world.backend)
    for raw in [*RAW_BODIES, b"", b"   "]:
        response = check(world, method, raw, before)
        if response.status_code < 400:  # an empty body is ``{}``
            before = snapshot(world.backend)


def test_every_method_has_a_valid_body_that_succeeds(world: World) -> None:
    """The hostile variants start from bodies the methods accept, so each one tests the
    field it changes and not a body refused for another reason."""
    for method in sorted(METHODS.keys() - DESTRUCTIVE):
        response = _post(world.client, method, _encode(valid_body(method, world.ids)))
        assert response.status_code in (200, 204), (method, response.text[:300])


def test_the_snapshot_sees_an_update_in_place(world: World) -> None:
    """A changed description alters no count; the store comparison must still see it."""
    before = snapshot(world.backend)
    body = {"entity_id": world.ids["ann"], "description": "changed"}
    assert _post(world.client, "update_entity", _encode(body)).status_code == 200
    assert snapshot(world.backend) != before


# -- regressions found by this suite (each was a 500) ----------------------------------------
@pytest.mark.parametrize(
    "raw",
    [b"[" * 50_000 + b"]" * 50_000, b'{"a":' * 5000 + b"1" + b"}" * 5000],
    ids=["deep-array", "deep-object"],
)
def test_too_deeply_nested_json_is_a_400(world: World, raw: bytes) -> None:
    response = _post(world.client, "setup", raw)
    assert response.status_code == 400, response.text
    assert "JSON" in response.json()["error"]


@pytest.mark.parametrize(
    ("method", "field"),
    [
        ("add_preference", "preference"),
        ("get_entity", "entity_id"),
        ("add_message", "content"),
        ("add_message", "metadata"),
    ],
)
def test_a_lone_surrogate_is_a_400_that_stores_nothing(
    world: World, method: str, field: str
) -> None:
    before = snapshot(world.backend)
    value: Any = {"k": LONE_SURROGATE} if field == "metadata" else LONE_SURROGATE
    body = {**valid_body(method, world.ids), field: value}
    response = _post(world.client, method, _encode(body))
    assert response.status_code == 400, response.text
    assert "surrogate" in response.json()["error"]
    assert snapshot(world.backend) == before


# -- property test ------------------------------------------------------------------------
HOSTILE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text()
    | st.sampled_from([*ODD_STRINGS, *ODD_NUMBERS]),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def _requests(draw: st.DrawFn, ids: dict[str, str]) -> tuple[str, dict[str, Any]]:
    method = draw(st.sampled_from(sorted(METHODS.keys() - {"clear_all_data"})))
    valid = valid_body(method, ids)
    names = [*valid, "id", "limit", "metadata"]
    changes = draw(st.dictionaries(st.sampled_from(names), HOSTILE, max_size=3))
    dropped = draw(st.sets(st.sampled_from(list(valid) or ["-"]), max_size=2))
    body = {k: v for k, v in {**valid, **changes}.items() if k not in dropped}
    return method, body


@settings(
    max_examples=150,
    deadline=None,
    database=None,  # no .hypothesis/ directory in the checkout
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_property_no_bridge_call_gets_a_500(shared_world: World, data: st.DataObject) -> None:
    method, body = data.draw(_requests(shared_world.ids))
    check(shared_world, method, _encode(body), snapshot(shared_world.backend))
