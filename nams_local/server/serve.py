"""Running the app under uvicorn: what ``nams-local serve`` does.

The socket is bound here, before uvicorn starts, so ``--port 0`` works and the line that
announces the address names the real port (a test or a script reads it). Access logging is
the app's own (``nams_local.server``): uvicorn's access log is off, so each request is
logged once, with the workspace hash and never the token. The engine is opened here, through
the wiring module (``nams_local.config``), and handed to the app, which closes it on shutdown.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import TextIO

from .ready import ReadyFile, ReadyServer

__all__ = ["DEFAULT_EXTRACTION", "LOOPBACK_HOSTS", "bind", "run"]

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})

#: ``serve``'s extraction mode unless ``--extraction`` or ``$NAMS_EXTRACTION`` says
#: otherwise: in the background, like hosted NAMS (the write's cost is the write's).
DEFAULT_EXTRACTION = "background"


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``port`` 0 = any free port).

    Created with ``proto=IPPROTO_TCP`` on purpose: asyncio turns Nagle's algorithm off only
    on accepted sockets whose protocol says TCP, and ``socket.create_server`` leaves it 0.
    With Nagle on, every keep-alive response waited ~40 ms for a delayed ACK.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(socket.SOMAXCONN)
    except BaseException:
        sock.close()
        raise
    return sock


def _ignore(signum: int, frame: FrameType | None) -> None:
    """Stands in for the default SIGINT/SIGTERM action once uvicorn has shut down.

    uvicorn catches the signal, shuts down gracefully (closing the backend in the app's
    lifespan), then re-raises the signal to the handler that was installed before it ran.
    With the defaults that would turn a clean shutdown into a kill (SIGTERM) or a
    ``KeyboardInterrupt`` traceback (SIGINT); with this one the command exits 0.
    """


def _configure_logging(stream: TextIO) -> None:
    log = logging.getLogger("nams_local.server")
    if not log.handlers:
        handler = logging.StreamHandler(stream)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
        log.addHandler(handler)
        log.propagate = False
    log.setLevel(logging.INFO)


def run(
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    db: str | Path | None = None,
    api_keys: Sequence[str] = (),
    embeddings: bool = True,
    max_body_bytes: int | None = None,
    out: TextIO | None = None,
    bridge: str | Path | None = None,
    extraction: str | None = None,
    cypher_timeout: float | None = None,
    cypher_memory_mb: int | None = None,
    ready_file: str | Path | None = None,
    allow_reset: bool = False,
    ui: bool = True,
) -> int:
    """Serve until SIGINT/SIGTERM; the exit status (0 after a graceful shutdown).

    ``bridge`` (a database path, usually ``":memory:"``) also serves the TCK bridge at
    ``/bridge``. It has no authentication and wipes its store on request, so it is refused
    on any address but loopback (exit status 2). ``cypher_timeout`` (seconds) and
    ``cypher_memory_mb`` bound each Cypher query; its workers start with the server.

    ``ready_file``: once the server accepts requests, the bound endpoint is written there
    as JSON (see ``ready.py``), for CI scripts in any language; it is removed first and on
    exit, so a stale file never names a dead server. ``allow_reset`` adds the extension
    route ``POST /v1/testing/reset`` (empties the caller's workspace; for test suites).
    ``ui`` serves the memory inspector at ``/ui`` (``docs/inspector.md``).

    ``extraction`` defaults to ``$NAMS_EXTRACTION``, else ``"background"``: like hosted NAMS,
    a write is acknowledged once the message and its extraction unit are committed, and
    clients follow ``GET /v1/conversations/{id}/extraction-status``.
    """
    import uvicorn

    from nams_local import config as wiring
    from nams_local.errors import NamsError

    from .app import create_app
    from .middleware import DEFAULT_MAX_BODY_BYTES

    out = out or sys.stdout
    _configure_logging(sys.stderr)
    ready = ReadyFile(Path(ready_file)) if ready_file is not None else None
    if ready is not None:
        ready.remove()
    path = str(db) if db is not None else wiring.default_db_path()
    if bridge is not None and host not in LOOPBACK_HOSTS:
        print(
            f"nams-local serve: --bridge serves without authentication, so only on a loopback "
            f"address (127.0.0.1, ::1, localhost), not {host}",
            file=sys.stderr,
        )
        return 2
    try:
        sock = bind(host, port)
    except OSError as exc:
        print(f"nams-local serve: cannot listen on {host}:{port}: {exc}", file=sys.stderr)
        return 1
    cypher: dict[str, float | int | bool] = {"prestart": True}
    if cypher_timeout is not None:
        cypher["timeout"] = cypher_timeout
    if cypher_memory_mb is not None:
        cypher["memory_mb"] = cypher_memory_mb
    try:
        chosen = extraction or wiring.extraction_from_env() or DEFAULT_EXTRACTION
        root = wiring.open_local_backend(
            path, embeddings=embeddings, extraction=chosen, cypher_limits=cypher
        )
    except NamsError as exc:  # an option out of range, such as --cypher-timeout 0
        sock.close()
        print(f"nams-local serve: {exc.message}", file=sys.stderr)
        return 2
    except BaseException:
        sock.close()
        raise
    try:
        app = create_app(
            root,
            db=path,
            api_keys=api_keys,
            max_body_bytes=max_body_bytes or DEFAULT_MAX_BODY_BYTES,
            bridge=bridge,
            owns_backend=True,
            allow_reset=allow_reset,
            ui=ui,
        )
    except BaseException:
        sock.close()
        asyncio.run(root.aclose())
        raise
    actual_port = sock.getsockname()[1]
    shown_host = f"[{host}]" if ":" in host else host
    auth = f"{len(api_keys)} configured key(s)" if api_keys else "open (any bearer token)"
    print(
        f"nams-local serving http://{shown_host}:{actual_port}/v1 (db: {path}; auth: {auth})",
        file=out,
        flush=True,
    )
    if bridge is not None:
        print(
            f"TCK bridge at http://{shown_host}:{actual_port}/bridge (its own store: {bridge})",
            file=out,
            flush=True,
        )
    if ui:
        print(f"memory inspector at http://{shown_host}:{actual_port}/ui", file=out, flush=True)
    if not api_keys and host not in LOOPBACK_HOSTS:
        print(
            "warning: no --api-key on a non-loopback address: anyone who can reach it can "
            "read and write memory (each token gets its own workspace)",
            file=sys.stderr,
        )
    if allow_reset:
        print(
            "warning: --allow-reset: POST /v1/testing/reset empties the caller's workspace",
            file=sys.stderr,
        )
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    endpoint = f"http://{shown_host}:{actual_port}/v1"
    server = ReadyServer(
        config, on_ready=None if ready is None else lambda: ready.write(endpoint, actual_port)
    )
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _ignore)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        if ready is not None:
            ready.remove()
    return 0 if server.started else 1
