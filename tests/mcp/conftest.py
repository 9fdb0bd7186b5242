"""Real MCP servers for the MCP tests: the SDK's ``MCPServer`` under uvicorn on loopback.

``weather_server`` serves ``weather.guarded_weather_app`` on a port the OS picks, for the
whole module (the tests only read from it).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
import uvicorn

from .weather import WeatherServer, guarded_weather_app


@pytest.fixture(scope="module")
def weather_server() -> Iterator[WeatherServer]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        guarded_weather_app(), log_level="warning", access_log=False, lifespan="on"
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
def closed_port_url(closed_port: int) -> str:
    """An MCP URL on a bound port nothing listens on: connections are refused at once."""
    return f"http://127.0.0.1:{closed_port}/mcp"
