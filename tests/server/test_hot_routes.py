"""The per-turn routes answered past FastAPI (``nams_local/server/hot_routes.py``) answer
exactly what FastAPI answers, and only requests of the plain shape take that way.

Two apps serve one store: the server as built, and the same app with the shortcut taken
out of ``RequestGate``. Every request below goes to both, and status, headers and body
bytes must be the same; the access log sees the same status either way.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from starlette.types import Receive, Scope, Send

from backends.sqlite import SQLiteBackend
from nams_local.server import create_app
from nams_local.server.middleware import RequestGate
from tests.asgi import BASE_URL, in_process

from .support import bearer

TOKEN = "hot-routes-token"


class _Routed:
    """Records, per request, whether Starlette's router handled it (it sets
    ``scope["endpoint"]`` on the request's scope when it picks a route)."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app
        self.routed: list[bool] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)
        if scope["type"] == "http":
            self.routed.append("endpoint" in scope)


def _without_shortcut(app: FastAPI) -> FastAPI:
    (gate,) = [m for m in app.user_middleware if m.cls is RequestGate]  # type: ignore[comparison-overlap]
    gate.kwargs["hot"] = None
    return app


@pytest.fixture
async def clients(
    root: SQLiteBackend,
) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient, _Routed]]:
    hot = _Routed(create_app(root))
    async with (
        hot.app.router.lifespan_context(hot.app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=hot), base_url=BASE_URL) as fast,
        in_process(_without_shortcut(create_app(root))) as full,
    ):
        yield fast, full, hot


def _same(a: httpx.Response, b: httpx.Response) -> None:
    assert (a.status_code, a.headers.multi_items(), a.content) == (
        b.status_code,
        b.headers.multi_items(),
        b.content,
    )


async def test_reads_answer_the_same_bytes_and_skip_the_router(
    clients: tuple[httpx.AsyncClient, httpx.AsyncClient, _Routed],
) -> None:
    fast, full, hot = clients
    auth = bearer(TOKEN)
    conv = (await full.post("/v1/conversations", headers=auth, json={"userId": "u"})).json()
    cid = conv["id"]
    for i in range(3):
        body = {"role": "user", "content": f"hello number {i} about Paris", "metadata": {"i": i}}
        assert (
            await full.post(f"/v1/conversations/{cid}/messages", headers=auth, json=body)
        ).status_code == 201
    plain: list[tuple[str, str, Any]] = [
        ("GET", "/v1/conversations", None),
        ("GET", "/v1/conversations?limit=1", None),
        ("GET", f"/v1/conversations/{cid}", None),
        ("GET", f"/v1/conversations/{cid}/messages", None),
        ("GET", f"/v1/conversations/{cid}/messages?limit=2", None),
        ("POST", f"/v1/conversations/{cid}/search", {"query": "Paris"}),
        (
            "POST",
            f"/v1/conversations/{cid}/search",
            {"query": "Paris", "limit": 2, "mode": "text", "threshold": 0.5},
        ),
        # Refused by the engine, through the same handler: 404, 400.
        ("GET", "/v1/conversations/nope", None),
        ("GET", "/v1/conversations/nope/messages", None),
        ("GET", "/v1/conversations?limit=500", None),
        ("POST", f"/v1/conversations/{cid}/search", {"query": "Paris", "limit": 0}),
        ("POST", f"/v1/conversations/{cid}/search", {"query": "  "}),
        ("POST", "/v1/conversations/nope/search", {"query": "Paris"}),
    ]
    other: list[tuple[str, str, Any]] = [
        # Not the plain shape: FastAPI answers (400s with its messages, 405, 307).
        ("GET", "/v1/conversations?limit=05", None),
        ("GET", "/v1/conversations?limit=1&limit=2", None),
        ("GET", f"/v1/conversations/{cid}/messages?limit=x", None),
        ("GET", "/v1/conversations?userId=u", None),
        ("POST", f"/v1/conversations/{cid}/search", {"query": "Paris", "limit": 2.0}),
        ("POST", f"/v1/conversations/{cid}/search", {"query": "Paris", "limit": True}),
        ("POST", f"/v1/conversations/{cid}/search", {"query": "Paris", "mode": "fuzzy"}),
        ("POST", f"/v1/conversations/{cid}/search", {"query": "Paris", "mode": {"a": 1}}),
        ("POST", f"/v1/conversations/{cid}/search", {"query": 5}),
        ("POST", f"/v1/conversations/{cid}/search", ["Paris"]),
        ("POST", f"/v1/conversations/{cid}/search", None),
        ("PUT", f"/v1/conversations/{cid}/search", {"query": "Paris"}),
        ("HEAD", f"/v1/conversations/{cid}", None),
    ]
    # A trailing slash is redirected by the router itself (E7), never by the shortcut.
    redirected: list[tuple[str, str, Any]] = [("GET", f"/v1/conversations/{cid}/", None)]
    for method, path, body in plain + other + redirected:
        content = None if body is None else json.dumps(body)
        headers = {**auth, "content-type": "application/json"} if content else auth
        a = await fast.request(
            method, path, headers=headers, content=content, follow_redirects=False
        )
        b = await full.request(
            method, path, headers=headers, content=content, follow_redirects=False
        )
        _same(a, b)
    assert hot.routed == [False] * len(plain) + [True] * len(other) + [False]


async def test_a_message_added_either_way_is_the_same_message(
    clients: tuple[httpx.AsyncClient, httpx.AsyncClient, _Routed],
) -> None:
    fast, full, hot = clients
    auth = bearer(TOKEN)
    cid = (await full.post("/v1/conversations", headers=auth, json={})).json()["id"]
    path = f"/v1/conversations/{cid}/messages"
    bodies: list[Any] = [
        {"role": "user", "content": "I moved to Berlin", "metadata": {"a": [1, {"b": None}]}},
        {"role": "assistant", "content": "Noted", "metadata": None, "extra": True},
        {"role": "robot", "content": "who am I"},  # the engine's 400
        {"role": "user", "content": "   "},  # blank: the engine's 400
    ]
    for body in bodies:
        a = await fast.post(path, headers=auth, json=body)
        b = await full.post(path, headers=auth, json=body)
        assert (a.status_code, a.headers.get("content-type")) == (
            b.status_code,
            b.headers.get("content-type"),
        )
        if a.status_code == 201:
            mine, theirs = a.json(), b.json()
            assert mine.keys() == theirs.keys()
            for volatile in ("id", "createdAt"):
                mine.pop(volatile), theirs.pop(volatile)
            assert mine == theirs
        else:
            assert a.content == b.content
    for body in (
        {"role": "user", "content": 5},
        {"role": "user"},
        {"role": "user", "content": "x", "metadata": [1]},
    ):
        a = await fast.post(path, headers=auth, json=body)
        b = await full.post(path, headers=auth, json=body)
        _same(a, b)
    text = await fast.post(
        path,
        headers={**auth, "content-type": "text/plain"},
        content=b'{"role":"user","content":"x"}',
    )
    _same(
        text,
        await full.post(
            path,
            headers={**auth, "content-type": "text/plain"},
            content=b'{"role":"user","content":"x"}',
        ),
    )
    assert hot.routed == [False] * 4 + [True] * 4
    listed = (await full.get(f"{path}?limit=200", headers=auth)).json()["messages"]
    assert sorted(m["content"] for m in listed) == [
        "I moved to Berlin",
        "I moved to Berlin",
        "Noted",
        "Noted",
    ]
