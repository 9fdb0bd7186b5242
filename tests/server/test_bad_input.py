"""Refused input: the right 4xx, the hosted error body, and nothing written (read back)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from backends.sqlite import SQLiteBackend
from nams_local.server import create_app
from tests.asgi import in_process

from .support import UNKNOWN_ID, Api, assert_error, bearer


async def _conversation(api: Api) -> str:
    conv: dict[str, Any] = await api.ok("POST", "/v1/conversations", 201, json={"userId": "u"})
    return str(conv["id"])


async def _messages(api: Api, conv: str) -> list[dict[str, Any]]:
    body = await api.ok("GET", f"/v1/conversations/{conv}/messages")
    messages: list[dict[str, Any]] = body["messages"]
    return messages


RAW_MESSAGE_BODIES = [
    pytest.param(b"{", id="truncated"),
    pytest.param(b"{'role': 'user'}", id="single-quotes"),
    pytest.param(b'{"role": "user", "content": "a",}', id="trailing-comma"),
    pytest.param(b'{"role": "user", "content": NaN}', id="nan"),
    pytest.param(b'{"role": "user", "content": "x", "metadata": {"n": Infinity}}', id="infinity"),
    pytest.param(b'{"role": "user", "content": "x", "metadata": {"n": 1e999}}', id="overflow"),
    pytest.param(
        b'{"role": "user", "content": "x", "metadata": {"n": ' + b"9" * 5000 + b"}}", id="huge-int"
    ),
    pytest.param(b"\xff\xfe{}", id="not-utf8"),
    pytest.param(b"[" * 100_000 + b"]" * 100_000, id="deep-nesting"),
    pytest.param(b"", id="empty"),
    pytest.param(b"null", id="null"),
    pytest.param(b"[]", id="array"),
    pytest.param(b'"a string"', id="string"),
    pytest.param(b"42", id="number"),
]


@pytest.mark.parametrize("raw", RAW_MESSAGE_BODIES)
async def test_malformed_bodies_are_400_and_write_nothing(alice: Api, raw: bytes) -> None:
    conv = await _conversation(alice)
    response = await alice.post(
        f"/v1/conversations/{conv}/messages",
        content=raw,
        headers={"content-type": "application/json"},
    )
    assert_error(response, 400)
    assert await _messages(alice, conv) == []


MESSAGE_BODIES = [
    pytest.param({"role": "user", "content": 5}, id="content-number"),
    pytest.param({"role": "user", "content": None}, id="content-null"),
    pytest.param({"role": "user", "content": ["a"]}, id="content-array"),
    pytest.param({"role": 1, "content": "hi"}, id="role-number"),
    pytest.param({"role": "robot", "content": "hi"}, id="unknown-role"),
    pytest.param({"role": "USER", "content": "hi"}, id="role-wrong-case"),
    pytest.param({"role": "user", "content": ""}, id="empty-content"),
    pytest.param({"role": "user", "content": " \n\t "}, id="blank-content"),
    pytest.param({"role": "user"}, id="missing-content"),
    pytest.param({"content": "hi"}, id="missing-role"),
    pytest.param({"role": "user", "content": "hi", "metadata": "x"}, id="metadata-string"),
    pytest.param({"role": "user", "content": "hi", "metadata": [1]}, id="metadata-array"),
]


@pytest.mark.parametrize("body", MESSAGE_BODIES)
async def test_invalid_messages_are_400_and_write_nothing(alice: Api, body: dict[str, Any]) -> None:
    conv = await _conversation(alice)
    assert_error(await alice.post(f"/v1/conversations/{conv}/messages", json=body), 400)
    bulk = {"messages": [{"role": "user", "content": "fine"}, body]}
    assert_error(await alice.post(f"/v1/conversations/{conv}/messages/bulk", json=bulk), 400)
    assert await _messages(alice, conv) == []
    conversation = await alice.ok("GET", f"/v1/conversations/{conv}")
    assert conversation["messageCount"] == 0


@pytest.mark.parametrize("count", [0, 101, 150])
async def test_bulk_outside_1_to_100_is_400_and_writes_nothing(alice: Api, count: int) -> None:
    conv = await _conversation(alice)
    body = {"messages": [{"role": "user", "content": f"m{i}"} for i in range(count)]}
    message = assert_error(
        await alice.post(f"/v1/conversations/{conv}/messages/bulk", json=body), 400
    )
    assert "100" in message or "empty" in message
    assert await _messages(alice, conv) == []


async def test_bulk_of_exactly_100_is_accepted(alice: Api) -> None:
    conv = await _conversation(alice)
    body = {"messages": [{"role": "user", "content": f"m{i}"} for i in range(100)]}
    stored = await alice.ok("POST", f"/v1/conversations/{conv}/messages/bulk", 201, json=body)
    assert [m["content"] for m in stored["messages"]] == [f"m{i}" for i in range(100)]
    assert len(await _messages(alice, conv)) == 50  # the default page of the newest


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ("?limit=x", 400),
        ("?limit=0", 400),
        ("?limit=-1", 400),
        ("?limit=201", 400),
        ("?limit=1.5", 400),
        ("?limit=" + "9" * 40, 400),
        ("?limit=200", 200),
    ],
)
async def test_list_limits(alice: Api, query: str, status: int) -> None:
    conv = await _conversation(alice)
    for path in (
        f"/v1/conversations/{conv}/messages",
        f"/v1/conversations/{conv}/observations",
        "/v1/conversations",
    ):
        response = await alice.get(path + query)
        if status == 200:
            assert response.status_code == 200
        else:
            assert_error(response, status)


@pytest.mark.parametrize(
    "body",
    [
        {"query": "x", "limit": "x"},
        {"query": "x", "limit": 0},
        {"query": "x", "limit": 10**30},
        {"query": "x", "limit": 1.5},
        {"query": "x", "limit": True},
        {"query": ""},
        {"query": "   "},
        {"query": 5},
        {"limit": 3},
        {"query": "x", "mode": "psychic"},
    ],
)
async def test_invalid_searches_are_400(alice: Api, body: dict[str, Any]) -> None:
    conv = await _conversation(alice)
    assert_error(await alice.post(f"/v1/conversations/{conv}/search", json=body), 400)
    assert_error(await alice.post("/v1/entities/search", json=body), 400)


async def test_vector_mode_without_embeddings_is_501(alice: Api) -> None:
    conv = await _conversation(alice)
    for mode in ("vector", "hybrid"):
        body = {"query": "x", "mode": mode}
        assert_error(await alice.post(f"/v1/conversations/{conv}/search", json=body), 501)
        assert_error(await alice.post("/v1/entities/search", json=body), 501)


ENTITY_BODIES = [
    pytest.param({"type": "Person"}, id="missing-name"),
    pytest.param({"name": "Ann"}, id="missing-type"),
    pytest.param({"name": "", "type": "Person"}, id="empty-name"),
    pytest.param({"name": "Ann", "type": "  "}, id="blank-type"),
    pytest.param({"name": 5, "type": "Person"}, id="name-number"),
    pytest.param({"name": "Ann", "type": "Person", "properties": {"age": 5}}, id="property-number"),
    pytest.param({"name": "Ann", "type": "Person", "properties": ["a"]}, id="properties-array"),
    pytest.param({"name": "Ann", "type": "Person", "description": 1}, id="description-number"),
]


@pytest.mark.parametrize("body", ENTITY_BODIES)
async def test_invalid_entities_are_400_and_write_nothing(alice: Api, body: dict[str, Any]) -> None:
    assert_error(await alice.post("/v1/entities", json=body), 400)
    assert (await alice.ok("GET", "/v1/entities"))["entities"] == []
    assert (await alice.ok("GET", "/v1/entities/graph"))["nodes"] == []


async def test_invalid_entity_updates_leave_the_entity_unchanged(alice: Api) -> None:
    entity = await alice.ok(
        "POST", "/v1/entities", 201, json={"name": "Ann", "type": "Person", "description": "d"}
    )
    before = await alice.ok("GET", f"/v1/entities/{entity['id']}")
    updates: list[dict[str, Any]] = [{}, {"name": ""}, {"name": 5}, {"description": ["x"]}]
    for update in updates:
        assert_error(await alice.put(f"/v1/entities/{entity['id']}", json=update), 400)
    feedbacks: list[dict[str, Any]] = [
        {"userScore": 1.5},
        {"userScore": -0.1},
        {"userScore": "high"},
        {"confirmed": "yes"},
    ]
    for feedback in feedbacks:
        assert_error(await alice.put(f"/v1/entities/{entity['id']}/feedback", json=feedback), 400)
    merges: list[dict[str, Any]] = [{}, {"targetId": entity["id"]}, {"targetId": 5}]
    for merge in merges:
        assert_error(await alice.post(f"/v1/entities/{entity['id']}/merge", json=merge), 400)
    assert await alice.ok("GET", f"/v1/entities/{entity['id']}") == before


async def test_invalid_reasoning_writes_nothing(alice: Api) -> None:
    conv = await _conversation(alice)
    steps = [
        {"reasoning": "r", "actionTaken": "a"},
        {"conversationId": conv, "actionTaken": "a"},
        {"conversationId": conv, "reasoning": "r"},
        {"conversationId": conv, "reasoning": "", "actionTaken": "a"},
        {"conversationId": conv, "reasoning": "r", "actionTaken": 3},
    ]
    for body in steps:
        assert_error(await alice.post("/v1/reasoning/steps", json=body), 400)
    calls = [
        {"input": "{}"},
        {"toolName": "t"},
        {"toolName": "t", "input": {"a": 1}},
        {"toolName": "t", "input": "{}", "status": "exploded"},
        {"toolName": "t", "input": "{}", "durationMs": -1},
        {"toolName": "t", "input": "{}", "durationMs": 2**70},
        {"toolName": "t", "input": "{}", "durationMs": 1.5},
    ]
    for body in calls:
        assert_error(await alice.post("/v1/reasoning/tool-calls", json=body), 400)
    trace = await alice.ok("GET", f"/v1/reasoning/trace/{conv}")
    assert trace["steps"] == [] and trace["toolCalls"] == []


async def test_invalid_relationships_write_nothing(alice: Api) -> None:
    a = await alice.ok("POST", "/v1/entities", 201, json={"name": "A", "type": "T"})
    b = await alice.ok("POST", "/v1/entities", 201, json={"name": "B", "type": "T"})
    bodies = [
        {"sourceId": a["id"], "targetId": b["id"]},
        {"sourceId": a["id"], "targetId": b["id"], "type": ""},
        {"sourceId": a["id"], "targetId": b["id"], "type": "R", "confidence": 2},
        {"sourceId": a["id"], "targetId": b["id"], "type": "R", "confidence": "high"},
        {"sourceId": a["id"], "targetId": b["id"], "type": "R", "properties": []},
    ]
    for body in bodies:
        assert_error(await alice.post("/v1/relationships", json=body), 400)
    nan = b'{"sourceId": "%s", "targetId": "%s", "type": "R", "properties": {"w": NaN}}' % (
        a["id"].encode(),
        b["id"].encode(),
    )
    response = await alice.post(
        "/v1/relationships", content=nan, headers={"content-type": "application/json"}
    )
    assert_error(response, 400)
    assert (await alice.ok("GET", "/v1/entities/graph"))["edges"] == []


UNKNOWN_ID_REQUESTS: list[tuple[str, str, Any]] = [
    ("GET", f"/v1/conversations/{UNKNOWN_ID}", None),
    ("POST", f"/v1/conversations/{UNKNOWN_ID}/messages", {"role": "user", "content": "x"}),
    (
        "POST",
        f"/v1/conversations/{UNKNOWN_ID}/messages/bulk",
        {"messages": [{"role": "user", "content": "x"}]},
    ),
    ("GET", f"/v1/conversations/{UNKNOWN_ID}/messages", None),
    ("POST", f"/v1/conversations/{UNKNOWN_ID}/search", {"query": "x"}),
    ("GET", f"/v1/conversations/{UNKNOWN_ID}/context", None),
    ("GET", f"/v1/conversations/{UNKNOWN_ID}/observations", None),
    ("GET", f"/v1/conversations/{UNKNOWN_ID}/reflections", None),
    ("GET", f"/v1/conversations/{UNKNOWN_ID}/extraction-status", None),
    ("GET", f"/v1/entities/{UNKNOWN_ID}", None),
    ("PUT", f"/v1/entities/{UNKNOWN_ID}", {"name": "x"}),
    ("PUT", f"/v1/entities/{UNKNOWN_ID}/feedback", {"userScore": 0.5}),
    ("GET", f"/v1/entities/{UNKNOWN_ID}/history", None),
    ("POST", f"/v1/entities/{UNKNOWN_ID}/merge", {"targetId": "other"}),
    ("GET", f"/v1/entities/{UNKNOWN_ID}/neighbourhood", None),
    (
        "POST",
        "/v1/reasoning/steps",
        {"conversationId": UNKNOWN_ID, "reasoning": "r", "actionTaken": "a"},
    ),
    ("GET", f"/v1/reasoning/steps?conversation_id={UNKNOWN_ID}", None),
    ("POST", "/v1/reasoning/tool-calls", {"toolName": "t", "input": "{}", "stepId": UNKNOWN_ID}),
    ("GET", f"/v1/reasoning/trace/{UNKNOWN_ID}", None),
    ("GET", f"/v1/reasoning/explain/{UNKNOWN_ID}", None),
    ("GET", f"/v1/reasoning/provenance/{UNKNOWN_ID}", None),
    ("POST", "/v1/relationships", {"sourceId": UNKNOWN_ID, "targetId": UNKNOWN_ID, "type": "R"}),
    ("POST", "/v1/graph/expand", {"nodeId": UNKNOWN_ID}),
    ("DELETE", f"/v1/auth/api-keys/{UNKNOWN_ID}", None),
    ("GET", f"/v1/auth/api-keys/{UNKNOWN_ID}/reveal", None),
    ("POST", f"/v1/auth/api-keys/{UNKNOWN_ID}/rotate", None),
]


@pytest.mark.parametrize(("method", "path", "body"), UNKNOWN_ID_REQUESTS)
async def test_unknown_ids_are_404_and_write_nothing(
    root: SQLiteBackend, alice: Api, method: str, path: str, body: Any
) -> None:
    kwargs = {"json": body} if body is not None else {}
    assert_error(await alice.request(method, path, **kwargs), 404)
    counts = root.store.run_sync(root.store.counts)
    assert set(counts.values()) == {0}, counts
    assert (await alice.ok("GET", "/v1/auth/api-keys"))["keys"] == []


async def test_cypher_writes_and_malformed_queries_are_400(alice: Api) -> None:
    message = assert_error(
        await alice.post("/v1/query", json={"cypher": "CREATE (n:Person) RETURN n"}), 400
    )
    assert "read-only" in message
    assert_error(await alice.post("/v1/query", json={"cypher": "MATCH (n RETURN n"}), 400)
    assert_error(await alice.post("/v1/query", json={"params": {}}), 400)
    assert (await alice.ok("GET", "/v1/entities"))["entities"] == []


async def test_unknown_routes_404_and_wrong_methods_405(alice: Api) -> None:
    for path in ("/v1/nothing", "/v1/conversations/a/b/c/d", "/v1/workspace", "/v2/conversations"):
        assert_error(await alice.get(path), 404)
    response = await alice.request("PATCH", "/v1/conversations")
    assert_error(response, 405)
    assert response.headers["allow"] == "GET, POST"
    response = await alice.request("PUT", "/v1/reasoning/tool-calls", json={})
    assert_error(response, 405)
    assert response.headers["allow"] == "POST"
    response = await alice.request("POST", "/v1/entities/some-id", json={})
    assert_error(response, 405)
    assert response.headers["allow"] == "DELETE, GET, PUT"
    # A trailing slash redirects to the route without it.
    redirect = await alice.get("/v1/conversations/")
    assert redirect.status_code == 307
    assert redirect.headers["location"].endswith("/v1/conversations")


@pytest.mark.parametrize("limit", [100, 1000])
async def test_body_limit_is_configurable(root: SQLiteBackend, limit: int) -> None:
    app = create_app(root, max_body_bytes=limit)
    async with in_process(app) as http:
        api = Api(http, "limited")
        conv = await _conversation(api)
        fits = {"role": "user", "content": "x" * (limit - 60)}
        assert (await api.post(f"/v1/conversations/{conv}/messages", json=fits)).status_code == 201
        over = {"role": "user", "content": "x" * limit}
        assert_error(await api.post(f"/v1/conversations/{conv}/messages", json=over), 413)

        async def chunked() -> Any:  # no Content-Length: the limit is counted, not declared
            for _ in range(limit // 10 + 2):
                yield b"x" * 10

        response = await api.post(
            f"/v1/conversations/{conv}/messages",
            content=chunked(),
            headers={"content-type": "application/json"},
        )
        assert_error(response, 413)
        assert len(await _messages(api, conv)) == 1


async def test_default_body_limit_is_one_mebibyte(app: FastAPI, http: httpx.AsyncClient) -> None:
    api = Api(http, "big")
    conv = await _conversation(api)
    big = {"role": "user", "content": "x" * (1024 * 1024)}
    message = assert_error(await api.post(f"/v1/conversations/{conv}/messages", json=big), 413)
    assert "1048576" in message
    assert await _messages(api, conv) == []
    # An oversized body is refused before it is parsed, even a malformed one.
    response = await api.post(
        f"/v1/conversations/{conv}/messages",
        content=b"{" * (1024 * 1024 + 1),
        headers={"content-type": "application/json"},
    )
    assert_error(response, 413)


async def test_conversation_metadata_must_be_a_flat_map(alice: Api) -> None:
    """Scalars are accepted (W1, tests/server/test_wire_fidelity.py); nesting is not."""
    for metadata in ({"n": {"a": 1}}, {"a": [None]}, ["x"], "x"):
        assert_error(await alice.post("/v1/conversations", json={"metadata": metadata}), 400)
    assert (await alice.ok("GET", "/v1/conversations"))["conversations"] == []


async def test_steps_without_conversation_id_are_400(http: httpx.AsyncClient) -> None:
    for query in ("", "?conversation_id=", "?conversation_id=%20"):
        response = await http.get("/v1/reasoning/steps" + query, headers=bearer("t"))
        assert "conversation_id" in assert_error(response, 400)
