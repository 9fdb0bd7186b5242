"""Hostile input to the newest ``/v1`` surfaces: no 500, no write when refused, no lost data.

``test_hostile.py`` walks every route with a table of bad requests; this module adds what
that table does not throw: lone surrogates (``"\\ud800"``, valid JSON but not text the
store can hold) in every written string, random Cypher and parameters at ``POST /v1/query``
(which must never write, whatever it answers), hostile names at ``POST /v1/entities`` (a
reused entity keeps what it had), and message routes whose content runs through the
synchronous extraction before the reply. The store is compared table by table around
every refused or read-only request.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends.sqlite import SQLiteBackend
from nams_local import HashingEmbedder
from nams_local.server import create_app
from tests.store_snapshot import Snapshot, snapshot

from .support import UNKNOWN_ID, bearer

LONE = "Ann\ud800"


@dataclass
class World:
    client: TestClient
    root: SQLiteBackend
    ids: dict[str, str]


def _settled(world: World) -> Snapshot:
    """The store once a previous test's deferred extraction has run: in ``"sync"`` mode the
    next non-write call waits for it (wire decision L6), so one read first keeps a unit that
    finishes between the two snapshots from counting as a write of the request under test."""
    world.client.get(f"/v1/conversations/{world.ids['conv']}/extraction-status")
    return snapshot(world.root)


def _post(world: World, path: str, body: Any) -> Any:
    """``body`` as a hostile client may write it (``\\ud800`` escapes, ``NaN``)."""
    raw = json.dumps(body, allow_nan=True).encode()
    return world.client.post(path, content=raw, headers={"content-type": "application/json"})


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    # Synchronous extraction (the default): a message's entities exist when its POST returns.
    root = SQLiteBackend(":memory:", embedder=HashingEmbedder(), vector_index="numpy")
    with TestClient(create_app(root), headers=bearer("hostile-new")) as client:
        conv = client.post("/v1/conversations", json={"userId": "u"}).json()["id"]
        client.post(
            f"/v1/conversations/{conv}/messages",
            json={"role": "user", "content": "Ann Lee lives in Oslo and works at Acme."},
        )
        ann = client.post("/v1/entities", json={"name": "Ann", "type": "Person"}).json()["id"]
        oslo = client.post("/v1/entities", json={"name": "Oslo", "type": "Place"}).json()["id"]
        step = client.post(
            "/v1/reasoning/steps",
            json={"conversationId": conv, "reasoning": "Ann?", "actionTaken": "recall"},
        ).json()["id"]
        yield World(client, root, {"conv": conv, "ann": ann, "oslo": oslo, "step": step})
    asyncio.run(root.aclose())


def _surrogate_requests(ids: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    conv = ids["conv"]
    message = {"role": "user", "content": LONE}
    return [
        ("/v1/conversations", {"userId": LONE}),
        ("/v1/conversations", {"userId": "u", "metadata": {"k": LONE}}),
        (f"/v1/conversations/{conv}/messages", message),
        (f"/v1/conversations/{conv}/messages", {**message, "content": "ok", "metadata": {LONE: 1}}),
        (f"/v1/conversations/{conv}/messages/bulk", {"messages": [message]}),
        (f"/v1/conversations/{conv}/search", {"query": LONE}),
        ("/v1/entities", {"name": LONE, "type": "Person"}),
        ("/v1/entities", {"name": "Bo", "type": LONE}),
        ("/v1/entities", {"name": "Bo", "type": "Person", "description": LONE}),
        ("/v1/entities/search", {"query": LONE}),
        ("/v1/relationships", {"sourceId": ids["ann"], "targetId": ids["oslo"], "type": LONE}),
        ("/v1/reasoning/steps", {"conversationId": conv, "reasoning": LONE, "actionTaken": "a"}),
        ("/v1/reasoning/tool-calls", {"stepId": ids["step"], "toolName": LONE, "input": "{}"}),
        ("/v1/query", {"cypher": "MATCH (n) WHERE n.name = $x RETURN n", "params": {"x": LONE}}),
        ("/v1/auth/api-keys", {"label": LONE}),
    ]


def test_lone_surrogates_are_400_and_write_nothing(world: World) -> None:
    """Each was a 500 (``UnicodeEncodeError`` from the store) before the strict parser
    refused them; the JSON escape is what a client in any language can send."""
    for path, body in _surrogate_requests(world.ids):
        before = _settled(world)
        response = _post(world, path, body)
        assert response.status_code == 400, (path, body, response.text[:300])
        assert "surrogate" in response.json()["error"], (path, response.text)
        assert _settled(world) == before, (path, body)


def test_a_surrogate_pair_is_one_character_and_is_stored(world: World) -> None:
    """The check refuses only lone halves: an escaped pair (an emoji) is ordinary text."""
    path = f"/v1/conversations/{world.ids['conv']}/messages"
    raw = b'{"role": "user", "content": "smile \\ud83d\\ude00"}'
    response = world.client.post(path, content=raw, headers={"content-type": "application/json"})
    assert response.status_code == 201, response.text
    assert response.json()["content"] == "smile 😀"


# -- POST /v1/query: read-only whatever the text ---------------------------------------------
TOKENS = [
    "MATCH", "(n)", "(n:Person)", "(a)-[r]->(b)", "(a)-[*1..9]->(b)", "-[:KNOWS]->", "WHERE",
    "RETURN", "n", "n.name", "count(*)", "LIMIT", "SKIP", "ORDER BY", "DESC", "=", "<>", "AND",
    "OR", "NOT", "$x", "$missing", "'Ann'", "\"Ann\"", "1", "-1", "1e999", "99999999999999999999",
    "CREATE", "DELETE", "DETACH", "SET", "MERGE", "REMOVE", "CALL", "{name: 'x'}", ",", ";",
    "(", ")", "[", "]", "{", "}", "//", "/*", "`n`", "\x00", "😀", "*", "AS", "DISTINCT",
]  # fmt: skip
PARAM = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30)
QUERIES = st.one_of(
    st.lists(st.sampled_from(TOKENS), max_size=14).map(" ".join),
    st.text(max_size=200),
)


@settings(
    max_examples=120,
    deadline=None,
    database=None,  # no .hypothesis/ directory in the checkout
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    cypher=QUERIES,
    params=st.dictionaries(st.sampled_from(["x", "name", "limit"]), PARAM, max_size=2),
)
def test_property_query_never_500s_and_never_writes(
    world: World, cypher: str, params: dict[str, Any]
) -> None:
    before = _settled(world)
    response = _post(world, "/v1/query", {"cypher": cypher, "params": params})
    label = (cypher, params, response.status_code, response.text[:300])
    assert response.status_code in (200, 400), label
    if response.status_code == 400:
        assert isinstance(response.json().get("error"), str), label
    else:
        assert set(response.json()) >= {"columns", "rows"}, label
    assert _settled(world) == before, ("POST /v1/query changed the store", *label)


@pytest.mark.parametrize(
    "cypher",
    [
        "CREATE (n:Person {name: 'Eve'}) RETURN n",
        "MATCH (n) DETACH DELETE n",
        "MATCH (n) SET n.name = 'x' RETURN n",
        "MERGE (n:Person {name: 'Ann'}) RETURN n",
        "MATCH (n) RETURN n; MATCH (m) DETACH DELETE m",
        "MATCH (n) RETURN n // DETACH DELETE n",
        "MATCH (n) REMOVE n.name RETURN n",
    ],
)
def test_cypher_writes_are_400_and_write_nothing(world: World, cypher: str) -> None:
    before = _settled(world)
    response = _post(world, "/v1/query", {"cypher": cypher})
    assert response.status_code in (200, 400), response.text
    assert _settled(world) == before, (cypher, response.text[:300])


# -- POST /v1/entities: a reused entity keeps what it had ------------------------------------
NAMES = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["Ann", "ann", " Ann ", "ANN", "Ann.", "A", "", " ", "\x00", "x" * 5000]),
)


@settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    name=NAMES,
    type=st.sampled_from(["Person", "person", "Place", "", "x" * 300]) | st.text(max_size=10),
    description=st.none() | st.text(max_size=50),
    properties=st.none() | st.dictionaries(st.text(max_size=8), PARAM, max_size=3),
)
def test_property_add_entity_never_500s_nor_overwrites_what_it_reuses(
    world: World, name: str, type: str, description: str | None, properties: Any
) -> None:
    ann_before = world.client.get(f"/v1/entities/{world.ids['ann']}").json()
    before = _settled(world)
    body = {"name": name, "type": type, "description": description, "properties": properties}
    response = _post(world, "/v1/entities", body)
    label = (body, response.status_code, response.text[:300])
    assert response.status_code < 500, label
    if response.status_code >= 400:
        assert isinstance(response.json().get("error"), str), label
        assert _settled(world) == before, label
        return
    created = response.json()
    assert isinstance(created["reused"], bool), label
    assert isinstance(created.get("mergeCandidates", []), list), label
    ann_after = world.client.get(f"/v1/entities/{world.ids['ann']}").json()
    assert ann_after["name"] == ann_before["name"], label
    if ann_before.get("description") is not None:
        assert ann_after["description"] == ann_before["description"], label
    for key, value in ann_before.get("properties", {}).items():
        assert ann_after["properties"][key] == value, label


def test_reusing_an_entity_does_not_overwrite_its_description(world: World) -> None:
    first = world.client.post(
        "/v1/entities", json={"name": "Zed", "type": "Person", "description": "the first"}
    ).json()
    again = world.client.post(
        "/v1/entities",
        json={"name": "Zed", "type": "Person", "description": "hostile", "properties": {"k": "v"}},
    )
    assert again.status_code == 201, again.text
    assert again.json()["id"] == first["id"] and again.json()["reused"] is True
    stored = world.client.get(f"/v1/entities/{first['id']}").json()
    assert stored["description"] == "the first"


# -- messages run through extraction before the reply -----------------------------------------
ODD_CONTENT = [
    "",
    "\x00\x00",
    "😀 " * 500,
    "Ann " * 5000,
    ". " * 5000,
    " ".join(f"Name{i} Person{i}" for i in range(2000)),
    "Dr. Mr. Mrs. St. Ave. e.g. i.e. " * 300,
    "Ann Lee works at Acme. " * 400,
    "ünïcødé Ærøskøbing Łódź İstanbul ß ΣΊΣΥΦΟΣ",
    "'; DROP TABLE entities; --",
    "x" * 30_000,
]


@pytest.mark.parametrize("content", ODD_CONTENT, ids=range(len(ODD_CONTENT)))
def test_odd_messages_are_stored_and_extracted_without_a_500(world: World, content: str) -> None:
    conv = world.ids["conv"]
    response = _post(
        world, f"/v1/conversations/{conv}/messages", {"role": "user", "content": content}
    )
    assert response.status_code in (201, 400), response.text[:300]
    if response.status_code == 400:
        assert isinstance(response.json().get("error"), str)
        return
    message_id = response.json()["id"]
    status = world.client.get(f"/v1/conversations/{conv}/extraction-status")
    assert status.status_code == 200, status.text[:300]
    units = {u["messageId"]: u for u in status.json()["units"]}
    assert units[message_id]["status"] in ("done", "skipped"), units[message_id]  # ran, no error
    graph = world.client.get("/v1/entities/graph")
    assert graph.status_code == 200, graph.text[:300]


def test_unknown_conversation_messages_are_404_and_write_nothing(world: World) -> None:
    before = _settled(world)
    for path, body in [
        (f"/v1/conversations/{UNKNOWN_ID}/messages", {"role": "user", "content": "Ann"}),
        (
            f"/v1/conversations/{UNKNOWN_ID}/messages/bulk",
            {"messages": [{"role": "user", "content": "Ann"}]},
        ),
    ]:
        response = _post(world, path, body)
        assert response.status_code == 404, response.text
        assert isinstance(response.json().get("error"), str)
    assert _settled(world) == before
