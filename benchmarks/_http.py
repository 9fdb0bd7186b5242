"""HTTP plumbing for benchmarks: ``nams-local serve`` on a loopback port, request counting.

The server is the real app under uvicorn (in a thread, so the benchmark's own event loop
stays free to time the client), on a socket bound before it starts. It serves whatever
backend it is given; the ``turn`` benchmark gives it a backend of its own on the file the
in-process figures come from (``turn/http_backends.py``), as a separate ``serve`` would.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Mapping
from typing import Any

import httpx

__all__ = ["UNFINISHED", "CountingTransport", "LoopbackServer", "wait_extracted"]


class LoopbackServer:
    """uvicorn serving ``app`` on a free loopback port, in a daemon thread."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        # uvicorn is handed this socket already bound: a port merely found free here and
        # bound by uvicorn later could be taken by another process in between.
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self.port = int(self._sock.getsockname()[1])
        config = uvicorn.Config(app, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> LoopbackServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        with httpx.Client(timeout=1.0) as client:
            while True:
                try:
                    if client.get(f"http://127.0.0.1:{self.port}/healthz").status_code == 200:
                        return self
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline or not self.thread.is_alive():
                    self.__exit__()
                    raise RuntimeError("the loopback server did not start")
                self.thread.join(timeout=0.02)

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self._sock.close()


class CountingTransport(httpx.AsyncBaseTransport):
    """Forwards to ``inner`` and counts the requests: the request budget of a turn."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner
        self.requests = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


#: Extraction states of a unit whose work is still to come (``/extraction-status``).
UNFINISHED = frozenset({"pending", "queued", "running", "in_progress"})


async def wait_extracted(
    client: httpx.AsyncClient,
    conversations: list[str],
    timeout: float,
    headers: Mapping[str, str] | None = None,
) -> int:
    """Poll every conversation's extraction status until none is unfinished (bounded);
    how many units were still unfinished at the end (0 = all done)."""
    deadline = time.monotonic() + timeout
    while True:
        unfinished = 0
        for conv in conversations:
            answer = await client.get(
                f"/v1/conversations/{conv}/extraction-status", headers=headers
            )
            answer.raise_for_status()
            summary = answer.json().get("summary", {})
            unfinished += sum(int(v) for k, v in summary.items() if k in UNFINISHED)
        if not unfinished or time.monotonic() > deadline:
            return unfinished
        await asyncio.sleep(0.2)
