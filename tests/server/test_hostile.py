"""No input produces a 500: a table of hostile requests at every route, then a property test.

Routes, their parameters and their body fields are read from the app's own OpenAPI
document, so the table grows with the app. The store has embeddings on (the fast hashing
embedder), so searches take every mode, and no request may get any 5xx (the engine answers
``POST /v1/query`` too: a 200, or a 400 for a write or bad Cypher).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends.sqlite import SQLiteBackend
from nams_local import HashingEmbedder
from nams_local.server import create_app

from .support import UNKNOWN_ID, ApiRoute, api_routes, bearer

TOKEN = "hostile-token"
ALLOWED_5XX: dict[tuple[str, str], set[int]] = {}

ODD_STRINGS = [
    "",
    " ",
    "\x00",
    "nul\x00byte",
    "ünïcødé — 😀 مرحبا \u202e",
    "\ud7ff\ue000\uffff",
    "x" * 20_000,
    "../../etc/passwd",
    "'; DROP TABLE messages; --",
    '*"()^:NEAR AND OR NOT',
    "%s %n {0} {{}}",
]
ODD_IDS = ["%00", quote("ünï😀"), "x" * 5000, "..", "%2e%2e", "%20", "*", "'", "NaN"]
ODD_NUMBERS: list[Any] = [0, -1, 2**31, 2**63, 10**30, -(10**30), 1.5, 1e308, True]


@dataclass
class World:
    client: TestClient
    app: FastAPI
    ids: dict[str, str]


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    # The hashing embedder and the numpy index keep this module fast. A text without word
    # tokens ("!!!", "😀") embeds to the zero vector; both indexes score it 0.0 (sqlite-vec's
    # NULL cosine distance included), so hostile texts exercise that path too.
    root = SQLiteBackend(":memory:", embedder=HashingEmbedder(), vector_index="numpy")
    app = create_app(root)
    with TestClient(app, headers=bearer(TOKEN)) as client:
        conv = client.post("/v1/conversations", json={"userId": "u"}).json()["id"]
        client.post(
            f"/v1/conversations/{conv}/messages/bulk",
            json={"messages": [{"role": "user", "content": "Ann lives in Oslo"}]},
        )
        ann = client.post("/v1/entities", json={"name": "Ann", "type": "Person"}).json()["id"]
        oslo = client.post("/v1/entities", json={"name": "Oslo", "type": "Place"}).json()["id"]
        rel = client.post(
            "/v1/relationships", json={"sourceId": ann, "targetId": oslo, "type": "LIVES_IN"}
        ).json()["id"]
        step = client.post(
            "/v1/reasoning/steps",
            json={"conversationId": conv, "reasoning": "Ann?", "actionTaken": "recall"},
        ).json()["id"]
        key = client.post("/v1/auth/api-keys", json={"label": "k"}).json()["id"]
        ids = {"conv": conv, "entity": ann, "other": oslo, "rel": rel, "step": step, "key": key}
        yield World(client, app, ids)
    asyncio.run(root.aclose())


def _real_id(path: str, ids: dict[str, str]) -> str:
    if "/relationships/" in path:
        return ids["rel"]
    if "/api-keys/" in path:
        return ids["key"]
    if "/entities/" in path or "/provenance/" in path:
        return ids["entity"]
    if "/explain/" in path:
        return ids["step"]
    if "/users/" in path:
        return "u"
    return ids["conv"]


def _fill(path: str, value: str) -> str:
    out, rest = "", path
    while "{" in rest:
        head, _, tail = rest.partition("{")
        out += head + value
        rest = tail.partition("}")[2]
    return out + rest


def _schema(document: dict[str, Any], route: ApiRoute) -> dict[str, Any]:
    operation = document["paths"][route.path][route.method.lower()]
    body = operation["requestBody"]["content"]["application/json"]["schema"]
    options = body.get("anyOf", [body])  # an optional body is anyOf [model, null]
    ref = next(option["$ref"] for option in options if "$ref" in option)
    schema: dict[str, Any] = document["components"]["schemas"][ref.rsplit("/", 1)[1]]
    return schema


def _kind(prop: dict[str, Any]) -> str:
    options = prop.get("anyOf", [prop])
    kinds = [o.get("type", "object") for o in options if o.get("type") != "null"]
    return kinds[0] if kinds else "string"


def _valid_value(name: str, kind: str, ids: dict[str, str]) -> Any:
    by_name = {
        "conversationId": ids["conv"],
        "stepId": ids["step"],
        "targetId": ids["other"],
        "sourceId": ids["entity"],
        "nodeId": ids["entity"],
        "role": "user",
        "mode": "hybrid",
        "status": "success",
        "userScore": 0.5,
    }
    if name in by_name:
        return by_name[name]
    return {"string": "Ann", "integer": 3, "number": 0.5, "boolean": True}.get(kind, {})


def _bodies(document: dict[str, Any], route: ApiRoute, ids: dict[str, str]) -> list[Any]:
    """Schema-driven bodies: valid, each field wrong, odd strings and numbers everywhere."""
    schema = _schema(document, route)
    props: dict[str, Any] = schema.get("properties", {})
    valid = {name: _valid_value(name, _kind(p), ids) for name, p in props.items()}
    if "messages" in props:
        valid["messages"] = [{"role": "user", "content": "hello"}]
    bodies: list[Any] = [valid, {}]
    wrong = {
        "string": 5,
        "integer": "x",
        "number": "x",
        "boolean": "yes",
        "array": {},
        "object": [],
    }
    for name, prop in props.items():
        bodies.append({**valid, name: wrong.get(_kind(prop), "x")})
        bodies.append({**valid, name: None})
    for text in ODD_STRINGS:
        bodies.append(
            {
                name: (text if _kind(p) == "string" else value)
                for (name, value), p in zip(valid.items(), props.values(), strict=True)
            }
        )
        if "messages" in props:
            bodies.append({"messages": [{"role": "user", "content": text}]})
    for number in ODD_NUMBERS:
        bodies.append(
            {
                name: (number if _kind(p) in ("integer", "number") else value)
                for (name, value), p in zip(valid.items(), props.values(), strict=True)
            }
        )
    if "messages" in props:
        bodies.append({"messages": [{"role": "user", "content": "m"}] * 101})
        bodies.append({"messages": [[]]})
    bodies.append({**valid, "metadata": {"deep": [[[{"x": ["y"]}]]]}, "extra": 1})
    return bodies


RAW_BODIES = [
    b"",
    b"null",
    b"[]",
    b"[{}]",
    b'"text"',
    b"0",
    b"{",
    b"\x00",
    b'{"a": NaN}',
    b"\xc3\x28",
    b"[" * 50_000 + b"]" * 50_000,
    b'{"a":' * 2000 + b"1" + b"}" * 2000,
]


def _check(response: Any, route: tuple[str, str], label: str) -> None:
    status = response.status_code
    allowed = ALLOWED_5XX.get(route, set())
    assert status < 500 or status in allowed, (route, label, status, response.text[:300])
    if status >= 400:
        body = response.json()
        assert isinstance(body, dict) and isinstance(body.get("error"), str), (route, label, body)


def _routes() -> list[ApiRoute]:
    app = create_app(SQLiteBackend(":memory:", embeddings=False))
    return api_routes(app)


ROUTES = _routes()


@pytest.mark.parametrize("route", ROUTES, ids=[f"{r.method} {r.path}" for r in ROUTES])
def test_hostile_requests_never_get_a_500(world: World, route: ApiRoute) -> None:
    client, ids = world.client, world.ids
    key = (route.method, route.path)
    paths = {_fill(route.path, _real_id(route.path, ids)), _fill(route.path, UNKNOWN_ID)}
    paths |= {_fill(route.path, odd) for odd in ODD_IDS}
    queries = ["", "?limit=99999999999999999999", "?limit=-5", "?depth=0", "?depth=9"]
    queries += ["?conversation_id=%00", f"?conversation_id={ids['conv']}", "?type=%00&name=%00"]
    queries += ["?name=" + quote(ODD_STRINGS[4]), "?limit=1&limit=2&user_id=%00&userId=u"]
    document = world.app.openapi()
    for path in sorted(paths):
        for query in queries:
            kwargs: dict[str, Any] = {}
            if route.has_body:
                kwargs["json"] = _bodies(document, route, ids)[0]
            _check(client.request(route.method, path + query, **kwargs), key, path + query)
    target = _fill(route.path, _real_id(route.path, ids))
    if route.has_body:
        for body in _bodies(document, route, ids):
            label = json.dumps(body)[:200]
            _check(client.request(route.method, target, json=body), key, label)
    for raw in RAW_BODIES:
        response = client.request(
            route.method, target, content=raw, headers={"content-type": "application/json"}
        )
        _check(response, key, repr(raw[:40]))
    for content_type in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):
        response = client.request(
            route.method, target, content=b"a=1", headers={"content-type": content_type}
        )
        _check(response, key, content_type)
    for method in ("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"):
        if method != route.method:
            response = client.request(method, target, json={})
            assert response.status_code < 500, (method, target, response.status_code)


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def _requests(draw: st.DrawFn) -> tuple[ApiRoute, str, Any]:
    route = draw(st.sampled_from(ROUTES))
    ident = draw(st.sampled_from([UNKNOWN_ID, "x"]) | st.text(min_size=1, max_size=40))
    path = _fill(route.path, quote(ident, safe=""))
    names = ["query", "limit", "role", "content", "name", "type", "targetId", "conversationId"]
    names += ["reasoning", "actionTaken", "toolName", "input", "label", "mode", "messages"]
    body = draw(
        JSON
        | st.dictionaries(st.sampled_from(names), JSON, max_size=6)
        | st.fixed_dictionaries(
            {"role": st.sampled_from(["user", "system", "x"]), "content": st.text()}
        )
    )
    return route, path, body


@settings(
    max_examples=300,
    deadline=None,
    database=None,  # no .hypothesis/ directory in the checkout
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(request=_requests())
def test_property_no_request_gets_a_500(world: World, request: tuple[ApiRoute, str, Any]) -> None:
    route, path, body = request
    response = world.client.request(route.method, path, json=body)
    _check(response, (route.method, route.path), f"{path} {json.dumps(body)[:200]}")
