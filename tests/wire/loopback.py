"""The local server on a real loopback port: uvicorn in a thread, started once per session.

The ``hosted-loopback`` contract configuration talks to it over real sockets (the same
path a deployed client takes). One server serves the whole session: each harness uses a
fresh bearer token, and in open mode (no configured keys) every token is its own empty
workspace, so tests stay independent without restarting the server.
"""

from __future__ import annotations

import atexit
import contextlib
import socket
import threading
import time

import httpx

__all__ = ["LoopbackServer", "loopback_server"]

_STARTUP_LIMIT = 30.0


class LoopbackServer:
    def __init__(self, *, embeddings: bool) -> None:
        import uvicorn

        from backends.sqlite import SQLiteBackend
        from nams_local.server import create_app

        self.root = SQLiteBackend(":memory:", embeddings=embeddings)
        # The server takes this socket already bound (to a port the OS picked), so no other
        # test or worker can take the port between choosing it and listening on it.
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self.port: int = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            create_app(self.root), log_level="warning", access_log=False, lifespan="on"
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )

    def start(self) -> None:
        """Start serving and return once ``GET /healthz`` answers 200."""
        self._thread.start()
        deadline = time.monotonic() + _STARTUP_LIMIT
        with httpx.Client(timeout=1.0) as client:
            while True:
                try:
                    if client.get(f"{self.url}/healthz").status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                if not self._thread.is_alive() or time.monotonic() > deadline:
                    raise RuntimeError(f"the loopback server at {self.url} did not start")
                self._server_started_or_timeout()

    def _server_started_or_timeout(self) -> None:
        # Wait for the next poll on the server thread itself: returns early if it died.
        self._thread.join(timeout=0.02)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._sock.close()
        # At interpreter exit the engine's worker thread may already be gone (executors
        # shut down before atexit runs); an in-memory database then needs no closing.
        with contextlib.suppress(RuntimeError):
            self.root.store.close()


_lock = threading.Lock()
_servers: dict[bool, LoopbackServer] = {}


def loopback_server(*, embeddings: bool = False) -> LoopbackServer:
    """The session's server (one per embeddings setting), started on first use."""
    with _lock:
        server = _servers.get(embeddings)
        if server is None:
            server = LoopbackServer(embeddings=embeddings)
            server.start()
            atexit.register(server.stop)
            _servers[embeddings] = server
        return server
