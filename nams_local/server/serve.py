"""Running the app under uvicorn: what ``nams-local serve`` does.

The socket is bound here, before uvicorn starts, so ``--port 0`` works and the line that
announces the address names the real port (a test or a script reads it). Access logging is
the app's own (``nams_local.server``): uvicorn's access log is off, so each request is
logged once, with the workspace hash and never the token. The engine is opened here, through
the wiring module (``nams_local.config``), and handed to the app, which closes it on shutdown.

``--workers N`` (N > 1) binds the address the same way and starts N worker processes
(``workers.py``), each listening on a socket of its own bound to it (``SO_REUSEPORT``, so
the kernel spreads connections over them) and running :func:`serve_on` over its own store
on the same file.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import TextIO

from .ready import ReadyFile, ReadyServer
from .serve_options import ServeOptions
from .sockets import bind

__all__ = [
    "DEFAULT_EXTRACTION",
    "DEFAULT_WORKERS",
    "LOOPBACK_HOSTS",
    "announce",
    "bind",
    "run",
    "serve_on",
]

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})

#: ``serve``'s extraction mode unless ``--extraction`` or ``$NAMS_EXTRACTION`` says
#: otherwise: in the background, like hosted NAMS (the write's cost is the write's).
DEFAULT_EXTRACTION = "background"

#: ``serve``'s process count unless ``--workers`` says otherwise (docs/sharing-a-file.md,
#: "Workers": one process is the default until several are shown faster on small machines).
DEFAULT_WORKERS = 1


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
    workers: int = DEFAULT_WORKERS,
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

    ``workers`` > 1 serves from that many processes over the one database file, supervised
    by this one (``workers.py``); refused (exit status 2) with an in-memory database or the
    TCK bridge, whose state would be per process.
    """
    from nams_local import config as wiring
    from nams_local.errors import NamsError

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
    refused = _refuse_workers(workers, path, bridge)
    if refused is not None:
        print(f"nams-local serve: {refused}", file=sys.stderr)
        return 2
    try:
        chosen = extraction or wiring.extraction_from_env() or DEFAULT_EXTRACTION
    except NamsError as exc:
        print(f"nams-local serve: {exc.message}", file=sys.stderr)
        return 2
    options = ServeOptions(
        db=path,
        api_keys=tuple(api_keys),
        embeddings=embeddings,
        max_body_bytes=max_body_bytes,
        bridge=None if bridge is None else str(bridge),
        extraction=chosen,
        cypher_timeout=cypher_timeout,
        cypher_memory_mb=cypher_memory_mb,
        allow_reset=allow_reset,
        ui=ui,
        # Vectors stored before the ack with one process too (wire decision L20): a vector
        # search then never waits for the writes queued before it, which put its p95 at
        # twice the target under load; several processes need it anyway (sharing-a-file.md).
        vectors_before_ack=embeddings,
    )
    try:
        sock = bind(host, port, shared=workers > 1)
    except OSError as exc:
        print(f"nams-local serve: cannot listen on {host}:{port}: {exc}", file=sys.stderr)
        return 1
    actual_port = sock.getsockname()[1]
    shown_host = f"[{host}]" if ":" in host else host
    endpoint = f"http://{shown_host}:{actual_port}/v1"

    def on_ready() -> None:
        if ready is not None:
            ready.write(endpoint, actual_port)

    try:
        if workers > 1:
            from .workers import Supervisor

            def announce_all() -> None:
                announce(out, host, actual_port, options, workers=workers)
                on_ready()

            return Supervisor(sock, options, workers, on_ready=announce_all).run()
        return serve_on(
            sock,
            options,
            on_open=lambda: announce(out, host, actual_port, options),
            on_ready=on_ready,
        )
    finally:
        sock.close()
        if ready is not None:
            ready.remove()


def _refuse_workers(workers: int, path: str, bridge: str | Path | None) -> str | None:
    """Why ``--workers`` cannot be honoured with these settings (``None``: it can)."""
    if workers < 1:
        return f"--workers must be at least 1, not {workers}"
    if workers == 1:
        return None
    if path == ":memory:" or path.startswith("file::memory:"):
        return "--workers > 1 needs a database file (an in-memory one would be per worker)"
    if bridge is not None:
        return "--bridge needs --workers 1 (the TCK bridge's store would be per worker)"
    return None


def announce(out: TextIO, host: str, port: int, options: ServeOptions, *, workers: int = 1) -> None:
    """The lines that say where the server listens (the first one is parsed by scripts),
    then the warnings about risky settings."""
    shown_host = f"[{host}]" if ":" in host else host
    keys = len(options.api_keys)
    auth = f"{keys} configured key(s)" if keys else "open (any bearer token)"
    processes = f"; {workers} workers" if workers > 1 else ""
    print(
        f"nams-local serving http://{shown_host}:{port}/v1 (db: {options.db}; auth: {auth}"
        f"{processes})",
        file=out,
        flush=True,
    )
    if options.bridge is not None:
        print(
            f"TCK bridge at http://{shown_host}:{port}/bridge (its own store: {options.bridge})",
            file=out,
            flush=True,
        )
    if options.ui:
        print(f"memory inspector at http://{shown_host}:{port}/ui", file=out, flush=True)
    if not options.api_keys and host not in LOOPBACK_HOSTS:
        print(
            "warning: no --api-key on a non-loopback address: anyone who can reach it can "
            "read and write memory (each token gets its own workspace)",
            file=sys.stderr,
        )
    if options.allow_reset:
        print(
            "warning: --allow-reset: POST /v1/testing/reset empties the caller's workspace",
            file=sys.stderr,
        )


def serve_on(
    sock: socket.socket,
    options: ServeOptions,
    *,
    on_open: Callable[[], None] | None = None,
    on_ready: Callable[[], None] | None = None,
) -> int:
    """Open the store, build the app and serve it on the listening ``sock`` until
    SIGINT/SIGTERM; the exit status (2: a setting the engine refused).

    ``on_open`` runs once the app is built (the banner), ``on_ready`` once uvicorn accepts
    requests (the ready file, or a worker telling its supervisor)."""
    import uvicorn

    from nams_local import config as wiring
    from nams_local.errors import NamsError

    from . import runtime
    from .app import create_app
    from .log_thread import log_thread
    from .middleware import DEFAULT_MAX_BODY_BYTES

    _configure_logging(sys.stderr)
    cypher: dict[str, float | int | bool] = {"prestart": True}
    if options.cypher_timeout is not None:
        cypher["timeout"] = options.cypher_timeout
    if options.cypher_memory_mb is not None:
        cypher["memory_mb"] = options.cypher_memory_mb
    engine: dict[str, object] = {}
    if options.vectors_before_ack:
        engine["vectors_before_ack"] = True
    try:
        root = wiring.open_local_backend(
            options.db,
            embeddings=options.embeddings,
            extraction=options.extraction,
            cypher_limits=cypher,
            **engine,
        )
    except NamsError as exc:  # an option out of range, such as --cypher-timeout 0
        print(f"nams-local serve: {exc.message}", file=sys.stderr)
        return 2
    try:
        app = create_app(
            root,
            db=options.db,
            api_keys=options.api_keys,
            max_body_bytes=options.max_body_bytes or DEFAULT_MAX_BODY_BYTES,
            bridge=options.bridge,
            owns_backend=True,
            allow_reset=options.allow_reset,
            ui=options.ui,
        )
    except BaseException:
        asyncio.run(root.aclose())
        raise
    if on_open is not None:
        on_open()
    # The loop and parser by name (``runtime.py``), not uvicorn's silent "auto". No proxy
    # headers: nothing here reads the client address or scheme, and trusting
    # X-Forwarded-For from loopback peers only cost a middleware layer per request.
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="on",
        loop=runtime.loop_choice(),
        http=runtime.http_protocol(),
        proxy_headers=False,
    )
    server = ReadyServer(config, on_ready=on_ready)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _ignore)
    with log_thread():
        server.run(sockets=[sock])
    return 0 if server.started else 1
