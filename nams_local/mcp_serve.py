"""Running the memory MCP server: what ``nams-local mcp`` does.

The backend comes from configuration like every entry point (``--db`` or the local
engine by default; hosted NAMS when ``NAMS_BACKEND=hosted`` / ``MEMORY_API_KEY`` say so),
so an MCP client gets the same memory an app using the library sees. Over stdio nothing
but protocol goes to stdout (the banner goes to stderr); over HTTP the socket is bound
before uvicorn starts so ``--port 0`` works and the banner names the real port.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from pathlib import Path
from typing import Any, Literal, TextIO

__all__ = ["open_configured_backend", "run"]

Transport = Literal["stdio", "http"]


def open_configured_backend(
    db: str | Path | None, embeddings: bool, workspace: str | None = None
) -> Any:
    """``--db`` means the local engine; otherwise the environment picks (``open_backend``).
    ``workspace``: the local engine's workspace (``serve`` gives each token its own), or
    the hosted ``X-Workspace-Id``."""
    from .config import backend_kind, open_hosted_backend, open_local_backend

    kind = backend_kind()  # a bad NAMS_BACKEND is refused even with --db
    if db is not None or kind == "local":
        options: dict[str, Any] = {"embeddings": embeddings}
        if workspace is not None:
            options["workspace"] = workspace
        return open_local_backend(db, **options)
    return open_hosted_backend(workspace_id=workspace)


async def _serve_stdio(server: Any, backend: Any) -> None:
    from mcp.server.stdio import stdio_server

    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        await backend.aclose()


def _serve_http(server: Any, host: str, port: int, out: TextIO, label: str) -> int:
    import uvicorn

    from .server.serve import bind

    try:
        sock = bind(host, port)
    except OSError as exc:
        print(f"nams-local mcp: cannot listen on {host}:{port}: {exc}", file=sys.stderr)
        return 1
    shown_host = f"[{host}]" if ":" in host else host
    actual_port = sock.getsockname()[1]
    print(f"nams-local mcp serving http://{shown_host}:{actual_port}/mcp ({label})", file=out)
    out.flush()
    app = server.streamable_http_app(host=host)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
    return 0


def run(
    *,
    transport: Transport = "stdio",
    host: str = "127.0.0.1",
    port: int = 8766,
    db: str | Path | None = None,
    embeddings: bool = True,
    user_id: str = "default",
    conversation_id: str | None = None,
    out: TextIO | None = None,
    workspace: str | None = None,
) -> int:
    """Serve the memory tools until the client disconnects (stdio) or SIGINT (http)."""
    from .integrations.mcp_server import create_mcp_server
    from .integrations.mcp_tools import require_mcp_sdk

    require_mcp_sdk()  # before anything is opened: one line with the install hint
    backend = open_configured_backend(db, embeddings, workspace)
    label = f"backend: {type(backend).__name__}; user: {user_id}"
    if workspace is not None:
        label += f"; workspace: {workspace}"
    server = create_mcp_server(backend, user_id=user_id, conversation_id=conversation_id)
    if transport == "stdio":
        print(f"nams-local mcp serving on stdio ({label})", file=sys.stderr, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(_serve_stdio(server, backend))
        return 0
    try:
        return _serve_http(server, host, port, out or sys.stdout, label)
    except KeyboardInterrupt:
        return 0
    finally:
        # uvicorn's loop is gone: close on a fresh one (best effort at shutdown).
        with contextlib.suppress(Exception):
            asyncio.run(backend.aclose())
