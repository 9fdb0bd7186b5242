"""The MCP server the MCP client tests connect to: the SDK's ``MCPServer`` with a weather
tool and a ``query_memory`` that clashes with the memory tool of the same name, at ``/mcp``
(open) and ``/secure/mcp`` (needs ``Authorization: Bearer s3cret``, else 401 with a
``WWW-Authenticate`` challenge)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp.server.mcpserver import MCPServer

__all__ = ["CHALLENGE", "TOKEN", "WeatherServer", "guarded_weather_app"]

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


def guarded_weather_app() -> Any:
    return _guarded(_weather_app())
