"""Authentication and tenancy: who may call, and whose data they see.

Every ``/v1`` route is enumerated from the app's own routing table, so a route added later
is covered without editing this file.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from backends.sqlite import SQLiteBackend
from nams_local.server import ApiKeyStore, create_app
from nams_local.server.keystore import KEY_LIFETIME
from tests.asgi import in_process

from .support import Api, api_routes, assert_error, bearer, concrete_path

CONFIGURED_A = "key-alpha-0123456789"
CONFIGURED_B = "key-bravo-0123456789"


@pytest.fixture
async def keyed_client(root: SQLiteBackend) -> AsyncIterator[httpx.AsyncClient]:
    """An app that accepts only two configured keys (and keys minted through the API)."""
    app = create_app(root, api_keys=[CONFIGURED_A, CONFIGURED_B, "key-shared-one=team"])
    async with in_process(app) as http:
        yield http


def test_every_route_is_enumerated(app: FastAPI) -> None:
    routes = {(r.method, r.path) for r in api_routes(app)}
    assert len(routes) >= 40
    assert ("GET", "/v1/conversations") in routes
    assert ("POST", "/v1/auth/api-keys/{id}/rotate") in routes
    assert ("GET", "/v1/capabilities") in routes


BAD_CREDENTIALS = [
    pytest.param({}, id="missing"),
    pytest.param({"Authorization": ""}, id="empty"),
    pytest.param({"Authorization": "Bearer"}, id="bearer-without-token"),
    pytest.param({"Authorization": "Bearer    "}, id="bearer-blank"),
    pytest.param({"Authorization": "Bearer two tokens"}, id="whitespace-in-token"),
    pytest.param({"Authorization": "Bearer " + "x" * 5000}, id="oversized"),
]


@pytest.mark.parametrize("headers", BAD_CREDENTIALS)
async def test_unauthenticated_requests_get_401_on_every_route(
    app: FastAPI, http: httpx.AsyncClient, headers: dict[str, str]
) -> None:
    for route in api_routes(app):
        kwargs: dict[str, Any] = {"json": {"anything": 1}} if route.has_body else {}
        response = await http.request(
            route.method, concrete_path(route.path), headers=headers, **kwargs
        )
        assert_error(response, 401)
        assert response.headers["www-authenticate"] == "Bearer"


async def test_wrong_key_gets_401_on_every_route_when_keys_are_configured(
    app: FastAPI, keyed_client: httpx.AsyncClient
) -> None:
    for route in api_routes(app):
        kwargs: dict[str, Any] = {"json": {"anything": 1}} if route.has_body else {}
        for token in ("not-a-key", CONFIGURED_A + "x", "nams_unknown"):
            response = await keyed_client.request(
                route.method, concrete_path(route.path), headers=bearer(token), **kwargs
            )
            assert assert_error(response, 401) == "invalid API key", (route, token)


async def test_auth_is_checked_before_the_body_is_parsed(http: httpx.AsyncClient) -> None:
    response = await http.post(
        "/v1/conversations", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert_error(response, 401)


async def test_token_is_accepted_with_or_without_the_bearer_prefix(
    http: httpx.AsyncClient,
) -> None:
    created = await http.post("/v1/conversations", json={}, headers=bearer("tok-1"))
    assert created.status_code == 201
    for header in ("tok-1", "bearer tok-1", "BEARER   tok-1  "):
        listed = await http.get("/v1/conversations", headers={"Authorization": header})
        assert listed.status_code == 200, header
        assert [c["id"] for c in listed.json()["conversations"]] == [created.json()["id"]]


async def test_healthz_and_openapi_need_no_credentials(http: httpx.AsyncClient) -> None:
    health = await http.get("/healthz")
    assert health.status_code == 200 and health.json()["status"] == "ok"
    assert (await http.get("/openapi.json")).status_code == 200


async def _populate(api: Api) -> dict[str, str]:
    """One object of every kind, owned by ``api``; their ids by kind."""
    conv = await api.ok("POST", "/v1/conversations", 201, json={"userId": "u"})
    msg = await api.ok(
        "POST",
        f"/v1/conversations/{conv['id']}/messages",
        201,
        json={"role": "user", "content": "I live in Paris"},
    )
    one = await api.ok("POST", "/v1/entities", 201, json={"name": "Paris", "type": "Location"})
    two = await api.ok("POST", "/v1/entities", 201, json={"name": "France", "type": "Location"})
    rel = await api.ok(
        "POST",
        "/v1/relationships",
        201,
        json={"sourceId": one["id"], "targetId": two["id"], "type": "IN"},
    )
    step = await api.ok(
        "POST",
        "/v1/reasoning/steps",
        201,
        json={"conversationId": conv["id"], "reasoning": "Paris?", "actionTaken": "look"},
    )
    call = await api.ok(
        "POST",
        "/v1/reasoning/tool-calls",
        201,
        json={"toolName": "t", "input": "{}", "stepId": step["id"]},
    )
    key = await api.ok("POST", "/v1/auth/api-keys", 201, json={"label": "mine"})
    return {
        "conversation": conv["id"],
        "message": msg["id"],
        "entity": one["id"],
        "other_entity": two["id"],
        "relationship": rel["id"],
        "step": step["id"],
        "tool_call": call["id"],
        "key": key["id"],
    }


async def _snapshot(api: Api, ids: dict[str, str]) -> dict[str, object]:
    """Everything ``api`` can read about its objects, to compare before and after."""
    conv, entity = ids["conversation"], ids["entity"]
    return {
        "conversations": await api.ok("GET", "/v1/conversations"),
        "conversation": await api.ok("GET", f"/v1/conversations/{conv}"),
        "messages": await api.ok("GET", f"/v1/conversations/{conv}/messages"),
        "entities": await api.ok("GET", "/v1/entities"),
        "entity": await api.ok("GET", f"/v1/entities/{entity}"),
        "graph": await api.ok("GET", "/v1/entities/graph"),
        "trace": await api.ok("GET", f"/v1/reasoning/trace/{conv}"),
        "keys": await api.ok("GET", "/v1/auth/api-keys"),
    }


async def _intrude(intruder: Api, ids: dict[str, str]) -> None:
    """Every read and write the intruder could aim at the victim's ids: all must be 404."""
    conv, entity, other = ids["conversation"], ids["entity"], ids["other_entity"]
    attempts: list[tuple[str, str, object]] = [
        ("GET", f"/v1/conversations/{conv}", None),
        ("DELETE", f"/v1/conversations/{conv}", None),
        ("POST", f"/v1/conversations/{conv}/messages", {"role": "user", "content": "x"}),
        (
            "POST",
            f"/v1/conversations/{conv}/messages/bulk",
            {"messages": [{"role": "user", "content": "x"}]},
        ),
        ("GET", f"/v1/conversations/{conv}/messages", None),
        ("POST", f"/v1/conversations/{conv}/search", {"query": "Paris"}),
        ("GET", f"/v1/conversations/{conv}/context", None),
        ("GET", f"/v1/conversations/{conv}/observations", None),
        ("GET", f"/v1/conversations/{conv}/reflections", None),
        ("GET", f"/v1/conversations/{conv}/extraction-status", None),
        ("GET", f"/v1/entities/{entity}", None),
        ("PUT", f"/v1/entities/{entity}", {"name": "Hacked"}),
        ("DELETE", f"/v1/entities/{entity}", None),
        ("PUT", f"/v1/entities/{entity}/feedback", {"userScore": 0.0}),
        ("GET", f"/v1/entities/{entity}/history", None),
        ("POST", f"/v1/entities/{entity}/merge", {"targetId": other}),
        ("GET", f"/v1/entities/{entity}/neighbourhood", None),
        ("POST", "/v1/relationships", {"sourceId": entity, "targetId": other, "type": "X"}),
        ("DELETE", f"/v1/relationships/{ids['relationship']}", None),
        (
            "POST",
            "/v1/reasoning/steps",
            {"conversationId": conv, "reasoning": "r", "actionTaken": "a"},
        ),
        ("GET", f"/v1/reasoning/steps?conversation_id={conv}", None),
        (
            "POST",
            "/v1/reasoning/tool-calls",
            {"toolName": "t", "input": "{}", "stepId": ids["step"]},
        ),
        ("GET", f"/v1/reasoning/trace/{conv}", None),
        ("GET", f"/v1/reasoning/explain/{ids['step']}", None),
        ("GET", f"/v1/reasoning/provenance/{entity}", None),
        ("DELETE", f"/v1/auth/api-keys/{ids['key']}", None),
        ("GET", f"/v1/auth/api-keys/{ids['key']}/reveal", None),
        ("POST", f"/v1/auth/api-keys/{ids['key']}/rotate", None),
    ]
    for method, path, body in attempts:
        kwargs = {"json": body} if body is not None else {}
        response = await intruder.request(method, path, **kwargs)
        if method == "DELETE" and "/auth/" not in path:
            # Idempotent deletes (W2): "not here" is done; the snapshot proves nothing moved.
            assert response.status_code == 200 and response.json() == {"status": "deleted"}
        else:
            assert_error(response, 404)


async def _assert_isolated(victim: Api, intruder: Api) -> None:
    ids = await _populate(victim)
    before = await _snapshot(victim, ids)
    # The intruder's own world is empty of the victim's objects ...
    assert (await intruder.ok("GET", "/v1/conversations"))["conversations"] == []
    assert (await intruder.ok("GET", "/v1/entities"))["entities"] == []
    assert (await intruder.ok("GET", "/v1/entities/graph")) == {"nodes": [], "edges": []}
    assert (await intruder.ok("GET", "/v1/auth/api-keys"))["keys"] == []
    by_name = await intruder.get("/v1/entities/by-name", params={"name": "Paris"})
    assert_error(by_name, 404)
    hits = await intruder.ok("POST", "/v1/entities/search", json={"query": "Paris"})
    assert hits["entities"] == []
    users = await intruder.ok("POST", "/v1/users/u/messages/search", json={"query": "Paris"})
    assert users["conversations"] == []
    # ... and it can neither read nor change the victim's.
    await _intrude(intruder, ids)
    assert await _snapshot(victim, ids) == before


async def test_two_tokens_in_open_mode_are_isolated_tenants(
    alice: Api, bob: Api, http: httpx.AsyncClient
) -> None:
    await _assert_isolated(alice, bob)
    # The other way round, with a fresh pair (a populated intruder would see its own data).
    await _assert_isolated(Api(http, "dave-token"), Api(http, "carol-token"))


async def test_two_configured_keys_are_isolated_tenants(keyed_client: httpx.AsyncClient) -> None:
    a, b = Api(keyed_client, CONFIGURED_A), Api(keyed_client, CONFIGURED_B)
    await _assert_isolated(a, b)


async def test_key_with_a_named_workspace_opens_that_workspace(
    keyed_client: httpx.AsyncClient, root: SQLiteBackend
) -> None:
    shared = Api(keyed_client, "key-shared-one")
    conv = await shared.ok("POST", "/v1/conversations", 201, json={"userId": "team-user"})
    assert conv["workspaceId"] == "team"
    # The engine's workspace "team" holds it: the same data a library user opening
    # SQLiteBackend(..., workspace="team") on this file would see.
    team = root.for_workspace("team")
    assert [c.id for c in await team.list_conversations()] == [conv["id"]]


async def test_workspace_header_selects_a_workspace_of_the_same_owner(
    alice: Api, bob: Api, http: httpx.AsyncClient
) -> None:
    alice_w1 = Api(http, alice.token, workspace="w1")
    bob_w1 = Api(http, bob.token, workspace="w1")
    in_w1 = await alice_w1.ok("POST", "/v1/conversations", 201, json={})
    assert in_w1["workspaceId"] == "w1"
    default = await alice.ok("POST", "/v1/conversations", 201, json={})
    # Each workspace sees only its own conversation ...
    assert [c["id"] for c in (await alice_w1.ok("GET", "/v1/conversations"))["conversations"]] == [
        in_w1["id"]
    ]
    assert [c["id"] for c in (await alice.ok("GET", "/v1/conversations"))["conversations"]] == [
        default["id"]
    ]
    # ... and another owner naming the same workspace id gets a workspace of their own.
    assert (await bob_w1.ok("GET", "/v1/conversations"))["conversations"] == []
    assert_error(await bob_w1.get(f"/v1/conversations/{in_w1['id']}"), 404)
    # Sending back the workspaceId the server reported lands in the same workspace.
    echo = Api(http, alice.token, workspace=default["workspaceId"])
    assert [c["id"] for c in (await echo.ok("GET", "/v1/conversations"))["conversations"]] == [
        default["id"]
    ]


@pytest.mark.parametrize("value", ["x" * 201, "tab\there", "nul\x00"])
async def test_unusable_workspace_header_is_400(http: httpx.AsyncClient, value: str) -> None:
    request = http.build_request("GET", "/v1/conversations", headers=bearer("t"))
    request.headers["X-Workspace-Id"] = value
    assert_error(await http.send(request), 400)


async def test_api_key_lifecycle_end_to_end(alice: Api, bob: Api, http: httpx.AsyncClient) -> None:
    conv = await alice.ok("POST", "/v1/conversations", 201, json={"userId": "alice"})
    created = await alice.ok(
        "POST", "/v1/auth/api-keys", 201, json={"label": "ci", "scopes": ["memory"]}
    )
    raw = created["key"]
    assert raw.startswith("nams_") and len(raw) > 30
    assert created["label"] == "ci"

    # The minted key authenticates and opens its creator's workspace.
    minted = Api(http, raw)
    listed = await minted.ok("GET", "/v1/conversations")
    assert [c["id"] for c in listed["conversations"]] == [conv["id"]]

    # Listing shows metadata only, never the raw key.
    keys_response = await alice.get("/v1/auth/api-keys")
    assert raw not in keys_response.text
    (item,) = keys_response.json()["keys"]
    assert item["id"] == created["id"] and "key" not in item and "revokedAt" not in item
    created_at = datetime.fromisoformat(item["createdAt"])
    expires_at = datetime.fromisoformat(item["expiresAt"])
    assert expires_at - created_at == KEY_LIFETIME
    # The minted key belongs to the same owner: it lists (and manages) the same keys.
    assert (await minted.ok("GET", "/v1/auth/api-keys"))["keys"] == [item]

    revealed = await alice.ok("GET", f"/v1/auth/api-keys/{created['id']}/reveal")
    assert revealed == {"id": created["id"], "key": raw, "label": "ci"}

    # Another owner cannot see, reveal, rotate or revoke it.
    assert (await bob.ok("GET", "/v1/auth/api-keys"))["keys"] == []
    for method, path in [
        ("GET", f"/v1/auth/api-keys/{created['id']}/reveal"),
        ("POST", f"/v1/auth/api-keys/{created['id']}/rotate"),
        ("DELETE", f"/v1/auth/api-keys/{created['id']}"),
    ]:
        assert_error(await bob.request(method, path), 404)
    assert (await minted.get("/v1/conversations")).status_code == 200

    # Rotation: a new key for the same workspace; the old one stops working.
    rotated = await alice.ok("POST", f"/v1/auth/api-keys/{created['id']}/rotate")
    assert rotated["label"] == "ci" and rotated["key"] != raw and rotated["id"] != created["id"]
    assert_error(await minted.get("/v1/conversations"), 401)
    fresh = Api(http, rotated["key"])
    assert [c["id"] for c in (await fresh.ok("GET", "/v1/conversations"))["conversations"]] == [
        conv["id"]
    ]
    assert_error(await alice.get(f"/v1/auth/api-keys/{created['id']}/reveal"), 410)
    assert_error(await alice.post(f"/v1/auth/api-keys/{created['id']}/rotate"), 410)
    keys = {k["id"]: k for k in (await alice.ok("GET", "/v1/auth/api-keys"))["keys"]}
    assert set(keys) == {created["id"], rotated["id"]}
    assert "revokedAt" in keys[created["id"]] and "revokedAt" not in keys[rotated["id"]]
    assert keys[rotated["id"]]["scopes"] == ["memory"]

    # Revocation: 401 from then on, reveal and rotate 410, revoking again is harmless.
    assert await alice.ok("DELETE", f"/v1/auth/api-keys/{rotated['id']}") == {"status": "revoked"}
    assert_error(await fresh.get("/v1/conversations"), 401)
    assert_error(await alice.get(f"/v1/auth/api-keys/{rotated['id']}/reveal"), 410)
    assert_error(await alice.post(f"/v1/auth/api-keys/{rotated['id']}/rotate"), 410)
    assert await alice.ok("DELETE", f"/v1/auth/api-keys/{rotated['id']}") == {"status": "revoked"}
    assert_error(await alice.get("/v1/auth/api-keys/unknown/reveal"), 404)


async def test_minted_keys_work_in_keys_mode(keyed_client: httpx.AsyncClient) -> None:
    a = Api(keyed_client, CONFIGURED_A)
    conv = await a.ok("POST", "/v1/conversations", 201, json={})
    created = await a.ok("POST", "/v1/auth/api-keys", 201, json={"label": "deploy"})
    minted = Api(keyed_client, created["key"])
    assert [c["id"] for c in (await minted.ok("GET", "/v1/conversations"))["conversations"]] == [
        conv["id"]
    ]
    await a.ok("DELETE", f"/v1/auth/api-keys/{created['id']}")
    assert_error(await minted.get("/v1/conversations"), 401)


@pytest.mark.parametrize(
    "body",
    [{}, {"label": ""}, {"label": "   "}, {"label": 5}, {"label": "x" * 201}, {"label": "a\nb"}],
)
async def test_api_key_needs_a_label(alice: Api, body: dict[str, object]) -> None:
    assert_error(await alice.post("/v1/auth/api-keys", json=body), 400)
    assert (await alice.ok("GET", "/v1/auth/api-keys"))["keys"] == []


async def test_minted_keys_expire_after_90_days(root: SQLiteBackend) -> None:
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    keys = ApiKeyStore(":memory:", clock=lambda: now[0])
    app = create_app(root, key_store=keys)
    async with in_process(app) as http:
        owner = Api(http, "owner")
        created = await owner.ok("POST", "/v1/auth/api-keys", 201, json={"label": "short"})
        minted = Api(http, created["key"])
        now[0] += KEY_LIFETIME - timedelta(seconds=1)
        assert (await minted.get("/v1/conversations")).status_code == 200
        now[0] += timedelta(seconds=1)
        assert "expired" in assert_error(await minted.get("/v1/conversations"), 401)
        # Rotating an expired key is how its owner gets a working one back.
        rotated = await owner.ok("POST", f"/v1/auth/api-keys/{created['id']}/rotate")
        assert (await Api(http, rotated["key"]).get("/v1/conversations")).status_code == 200


async def test_minted_keys_persist_in_the_database_file(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    token = "persistent-owner"

    async def open_app() -> tuple[FastAPI, SQLiteBackend]:
        backend = SQLiteBackend(db, embeddings=False)
        return create_app(backend, db=db), backend

    app, backend = await open_app()
    async with in_process(app) as http:
        owner = Api(http, token)
        conv = await owner.ok("POST", "/v1/conversations", 201, json={})
        created = await owner.ok("POST", "/v1/auth/api-keys", 201, json={"label": "keep"})
    await backend.aclose()

    app, backend = await open_app()
    async with in_process(app) as http:
        minted = Api(http, created["key"])
        listed = await minted.ok("GET", "/v1/conversations")
        assert [c["id"] for c in listed["conversations"]] == [conv["id"]]
        assert [k["id"] for k in (await minted.ok("GET", "/v1/auth/api-keys"))["keys"]] == [
            created["id"]
        ]
    await backend.aclose()
