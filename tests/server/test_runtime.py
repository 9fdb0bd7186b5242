"""The app's life: access log, shutdown, a closed store, an unexpected failure, a socket."""

from __future__ import annotations

import asyncio
import logging
import socket
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from backends.sqlite import SQLiteBackend
from nams_local.server import create_app
from nams_local.server.sockets import bind
from tests.asgi import BASE_URL, in_process

from .support import Api, assert_error, bearer, live_server

SECRET = "very-secret-token-123"


async def test_access_log_has_one_line_per_request_and_never_the_token(
    http: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="nams_local.server")
    api = Api(http, SECRET)
    conv = await api.ok("POST", "/v1/conversations", 201, json={"userId": SECRET})
    assert_error(await api.get("/v1/conversations/nope"), 404)
    assert_error(await http.get("/v1/conversations"), 401)
    await http.get("/healthz")
    records = [r for r in caplog.records if r.name == "nams_local.server"]
    assert [(r.http_method, r.http_path, r.http_status) for r in records] == [  # type: ignore[attr-defined]
        ("POST", "/v1/conversations", 201),
        ("GET", "/v1/conversations/nope", 404),
        ("GET", "/v1/conversations", 401),
        ("GET", "/healthz", 200),
    ]
    hashes = [r.workspace_hash for r in records]  # type: ignore[attr-defined]
    assert hashes[0] == hashes[1] and len(hashes[0]) == 12 and hashes[2:] == ["-", "-"]
    assert conv["workspaceId"] not in hashes[0]
    for record in records:
        assert isinstance(record.duration_ms, float) and record.duration_ms >= 0  # type: ignore[attr-defined]
        text = record.getMessage()
        assert SECRET not in text and conv["workspaceId"] not in text
        assert text.startswith(f"{record.http_method} {record.http_path} {record.http_status} ")  # type: ignore[attr-defined]


async def test_shutdown_closes_the_engine_the_app_opened(tmp_path: Path) -> None:
    app = create_app(db=tmp_path / "owned.db", embeddings=False)
    root = app.state.nams.pool.root
    assert isinstance(root, SQLiteBackend)
    async with in_process(app) as http:
        assert (await http.post("/v1/conversations", headers=bearer("t"))).status_code == 201
        assert not root.store.closed
    assert root.store.closed


async def test_shutdown_leaves_a_caller_owned_engine_open(root: SQLiteBackend) -> None:
    app = create_app(root)
    async with app.router.lifespan_context(app):
        pass
    assert not root.store.closed
    assert await root.list_conversations() == []


async def test_a_closed_store_answers_503(root: SQLiteBackend, http: httpx.AsyncClient) -> None:
    await root.aclose()
    message = assert_error(await http.get("/v1/conversations", headers=bearer("t")), 503)
    assert "closed" in message


class _Faulty(SQLiteBackend):
    """The real engine with one operation broken, to see an unexpected error's answer."""

    def for_workspace(self, workspace: str) -> _Faulty:
        return _Faulty(workspace=workspace, _store=self.store)

    async def list_entities(self, type: str | None = None) -> list:  # type: ignore[type-arg]
        raise RuntimeError("boom: internal detail that must not leak")


async def test_unexpected_errors_are_500_internal_error_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="nams_local.server")
    root = _Faulty(":memory:", embeddings=False)
    app = create_app(root)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as http:
        response = await http.get("/v1/entities", headers=bearer("t"))
        assert response.status_code == 500 and response.json() == {"error": "internal error"}
        assert "boom" not in response.text
        # The rest of the app is unaffected.
        assert (await http.get("/v1/conversations", headers=bearer("t"))).status_code == 200
    await root.aclose()
    logged = [r for r in caplog.records if r.name == "nams_local.server"]
    assert any(r.exc_info and "boom" in str(r.exc_info[1]) for r in logged)
    assert any(getattr(r, "http_status", None) == 500 for r in logged)


class _Records(logging.Handler):
    """Keeps every record of one logger (uvicorn's loggers do not propagate to caplog)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_a_500_leaves_the_keep_alive_connection_usable(caplog: pytest.LogCaptureFixture) -> None:
    """Reproduces issue 15 item 4: after any 500, uvicorn logged "Exception in ASGI
    application" (Starlette's ServerErrorMiddleware re-raised the exception its handler had
    already answered) and closed the connection without ``Connection: close``, so the
    client's next request on it failed. Now every request on one connection is answered."""
    caplog.set_level(logging.CRITICAL, logger="nams_local.server")  # the expected tracebacks
    uvicorn_errors = _Records()
    uvicorn_logger = logging.getLogger("uvicorn.error")
    uvicorn_logger.addHandler(uvicorn_errors)
    root = _Faulty(":memory:", embeddings=False)
    try:
        with live_server(create_app(root)) as url, httpx.Client(base_url=url) as http:
            ports: set[int] = set()
            for _ in range(5):
                failed = http.get("/v1/entities", headers=bearer("t"))
                assert failed.status_code == 500 and failed.json() == {"error": "internal error"}
                assert failed.headers.get("connection", "").lower() != "close"
                ok = http.get("/v1/conversations", headers=bearer("t"))
                assert ok.status_code == 200, ok.text
                for response in (failed, ok):
                    stream = response.extensions["network_stream"]
                    ports.add(stream.get_extra_info("client_addr")[1])
            assert len(ports) == 1, f"the connection was replaced: {ports}"
    finally:
        uvicorn_logger.removeHandler(uvicorn_errors)
        asyncio.run(root.aclose())
    logged = [r.getMessage() for r in uvicorn_errors.records]
    assert not any("Exception in ASGI application" in m for m in logged), logged


def test_real_socket_round_trip_with_configured_keys(tmp_path: Path) -> None:
    app = create_app(db=tmp_path / "socket.db", embeddings=False, api_keys=["k1"])
    with live_server(app) as url, httpx.Client(base_url=url) as http:
        assert http.get("/v1/conversations", headers=bearer("k2")).status_code == 401
        created = http.post("/v1/conversations", json={"userId": "u"}, headers=bearer("k1"))
        assert created.status_code == 201
        conv = created.json()["id"]
        added = http.post(
            f"/v1/conversations/{conv}/messages",
            json={"role": "user", "content": "über 😀"},
            headers={"Authorization": "k1"},
        )
        assert added.status_code == 201
        listed = http.get(f"/v1/conversations/{conv}/messages", headers=bearer("k1"))
        assert [m["content"] for m in listed.json()["messages"]] == ["über 😀"]
        too_big = http.post(
            f"/v1/conversations/{conv}/messages",
            content=b"x" * (1024 * 1024 + 1),
            headers={**bearer("k1"), "content-type": "application/json"},
        )
        assert too_big.status_code == 413 and "error" in too_big.json()
    # The lifespan ran on shutdown: the engine the app opened is closed.
    assert app.state.nams.pool.root.store.closed


async def test_after_shutdown_requests_get_503_not_500(app: FastAPI) -> None:
    async with app.router.lifespan_context(app):
        pass
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as http:
        assert_error(await http.get("/v1/conversations", headers=bearer("t")), 503)


async def test_served_connections_do_not_wait_on_nagle() -> None:
    """Every accepted connection has TCP_NODELAY (else each keep-alive reply waits ~40 ms)."""
    sock = bind("127.0.0.1", 0)
    accepted: list[int] = []

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raw = writer.get_extra_info("socket")
        accepted.append(raw.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    server = await asyncio.start_server(on_connect, sock=sock)
    async with server:
        _, writer = await asyncio.open_connection(*sock.getsockname()[:2])
        while not accepted:
            await asyncio.sleep(0.01)  # poll the condition set by the handler
        writer.close()
    assert accepted == [1]
