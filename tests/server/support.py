"""Helpers for the server tests: a real uvicorn on loopback, readiness, route listing."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI

from nams_local.server.sockets import bind

__all__ = [
    "UNKNOWN_ID",
    "Api",
    "ApiRoute",
    "api_routes",
    "assert_error",
    "bearer",
    "concrete_path",
    "live_server",
    "wait_until_healthy",
]

#: A well-formed id that no store holds.
UNKNOWN_ID = "00000000-0000-4000-8000-000000000000"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def wait_until_healthy(base_url: str, timeout: float = 20.0) -> None:
    """Poll ``GET /healthz`` until it answers 200; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    with httpx.Client(base_url=base_url, timeout=2.0) as client:
        while time.monotonic() < deadline:
            try:
                if client.get("/healthz").status_code == 200:
                    return
            except httpx.TransportError as exc:
                last = exc
            time.sleep(0.02)  # between polls of a condition, not instead of waiting for it
    raise AssertionError(f"{base_url} never became healthy: {last!r}")


@contextmanager
def live_server(app: FastAPI) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free loopback port in a thread; yield its base URL.

    The app's lifespan runs (startup and shutdown) as under ``nams-local serve``.
    """
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(base_url)
        yield base_url
    finally:
        server.should_exit = True
        thread.join(timeout=20)
        sock.close()
        assert not thread.is_alive(), "uvicorn did not stop"


@dataclass(frozen=True)
class ApiRoute:
    method: str
    path: str
    has_body: bool
    extension: bool


def api_routes(app: FastAPI) -> list[ApiRoute]:
    """Every ``/v1`` operation the app serves, read from the app's own OpenAPI document.

    (The document is generated from the routing table, and unlike ``app.routes`` it looks
    the same whatever way the FastAPI version nests included routers.)
    """
    found = []
    for path, operations in app.openapi()["paths"].items():
        if not path.startswith("/v1"):
            continue
        for method, operation in operations.items():
            found.append(
                ApiRoute(
                    method.upper(),
                    path,
                    "requestBody" in operation,
                    bool(operation.get("x-nams-local-extension")),
                )
            )
    return sorted(found, key=lambda r: (r.path, r.method))


def concrete_path(template: str, value: str = UNKNOWN_ID) -> str:
    """``template`` with every ``{param}`` replaced by ``value``."""
    return re.sub(r"\{[^}]+\}", value, template)


class Api:
    """An ``httpx.AsyncClient`` that sends one caller's token (and workspace header)."""

    def __init__(self, client: httpx.AsyncClient, token: str, workspace: str | None = None) -> None:
        self.client = client
        self.token = token
        self.headers = bearer(token)
        if workspace is not None:
            self.headers["X-Workspace-Id"] = workspace

    async def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {**self.headers, **kwargs.pop("headers", {})}
        return await self.client.request(method, path, headers=headers, **kwargs)

    async def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return await self.request("GET", path, **kwargs)

    async def post(self, path: str, **kwargs: Any) -> httpx.Response:
        return await self.request("POST", path, **kwargs)

    async def put(self, path: str, **kwargs: Any) -> httpx.Response:
        return await self.request("PUT", path, **kwargs)

    async def delete(self, path: str, **kwargs: Any) -> httpx.Response:
        return await self.request("DELETE", path, **kwargs)

    async def ok(self, method: str, path: str, status: int = 200, **kwargs: Any) -> Any:
        """The JSON body of a request that must answer ``status``."""
        response = await self.request(method, path, **kwargs)
        assert response.status_code == status, (method, path, response.status_code, response.text)
        return response.json()


def assert_error(response: httpx.Response, status: int) -> str:
    """The response is ``status`` with the hosted ``{"error": "<message>"}`` body."""
    assert response.status_code == status, (response.status_code, response.text)
    body = response.json()
    assert set(body) == {"error"} and isinstance(body["error"], str) and body["error"], body
    message: str = body["error"]
    return message
