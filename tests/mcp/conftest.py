"""Real MCP servers for the MCP tests: the SDK's ``MCPServer`` under uvicorn on loopback.

``weather_server`` serves ``get_weather`` and a ``query_memory`` that clashes with the
memory tool of the same name, at ``/mcp`` (open) and ``/secure/mcp`` (needs
``Authorization: Bearer s3cret``, else 401 with a ``WWW-Authenticate`` challenge).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import uvicorn
from mcp.server.mcpserver import MCPServer

# The core tests' fixtures: the real engine in memory, and a recording logger.
from tests.core.conftest import engine, logger

__all__ = ["CHALLENGE", "TOKEN", "WeatherServer", "engine", "logger"]

TOKEN = "s3cret"
CHALLENGE = 'Bearer realm="weather", error="invalid_token"'


def _weather_app() -> Any:
    server = MCPServer("weather")

    @server.tool(description="The current weather in a city.")
    def get_weather(city: str) -> str:
        return f"sunny in {city}"

    @server.tool(description="A tool whose name clashes with the NAMS memory tool.")
    def query_memory(query: str) -> str:
        return f"remote memory for {query}"

    return server.streamable_http_app()


def _guarded(app: Any) -> Any:
    """``/secure/mcp`` is ``/mcp`` behind a bearer token."""

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/secure"):
            headers = dict(scope["headers"])
            if headers.get(b"authorization") != f"Bearer {TOKEN}".encode():
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"www-authenticate", CHALLENGE.encode()),
                            (b"content-type", b"application/json"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": b'{"error":"unauthorized"}'})
                return
            scope = {**scope, "path": scope["path"].removeprefix("/secure")}
        await app(scope, receive, send)

    return guarded


@dataclass
class WeatherServer:
    url: str
    secure_url: str


@pytest.fixture(scope="module")
def weather_server() -> Iterator[WeatherServer]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        _guarded(_weather_app()), log_level="warning", access_log=False, lifespan="on"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        assert thread.is_alive(), "the MCP test server died on startup"
        thread.join(timeout=0.02)  # waits on the server thread, returns early if it dies
    try:
        yield WeatherServer(f"http://127.0.0.1:{port}/mcp", f"http://127.0.0.1:{port}/secure/mcp")
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture
def closed_port_url() -> Iterator[str]:
    """A URL on a bound port nothing listens on: connections are refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
