"""A real loopback HTTP proxy in front of ``nams-local serve`` that behaves like hosted NAMS
where the tests need it to: it answers every ``throttle_every``-th POST with ``429`` and a
``Retry-After`` (as the wire contract's rate-limited routes do, without touching the
store), and it can hide the extension route ``GET /v1/capabilities`` (404, as on hosted
NAMS), so the hosted client assumes hosted NAMS's capabilities. Everything else is
forwarded unchanged.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

__all__ = ["Proxy", "proxy"]

_HOP = {
    "connection",
    "transfer-encoding",
    "content-length",
    "content-encoding",
    "keep-alive",
    "host",
}


@dataclass
class Proxy:
    url: str
    throttled: int = 0
    posts: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


@contextmanager
def proxy(
    upstream: str,
    *,
    throttle_every: int = 0,
    retry_after: str = "1",
    hide_capabilities: bool,
    refuse: str | None = None,
) -> Iterator[Proxy]:
    """``refuse``: a request body containing this text is answered 400 (a record the
    target will not take), untouched by the store."""
    client = httpx.Client(base_url=upstream, timeout=30.0)
    state = Proxy(url="")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            return

        def _answer(self, status: int, body: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            if hide_capabilities and self.path.split("?")[0] == "/v1/capabilities":
                self._answer(404, b'{"error":"Not found"}', {"Content-Type": "application/json"})
                return
            if refuse is not None and refuse.encode() in body:
                self._answer(400, b'{"error":"refused"}', {"Content-Type": "application/json"})
                return
            if self.command == "POST" and throttle_every:
                with state.lock:
                    state.posts += 1
                    throttle = state.posts % throttle_every == 0
                    state.throttled += throttle
                if throttle:
                    self._answer(
                        429,
                        b'{"error":"rate limited"}',
                        {"Content-Type": "application/json", "Retry-After": retry_after},
                    )
                    return
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
            reply = client.request(self.command, self.path, content=body, headers=headers)
            out = {k: v for k, v in reply.headers.items() if k.lower() not in _HOP}
            self._answer(reply.status_code, reply.content, out)

        do_GET = do_POST = do_PUT = do_DELETE = _forward

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02})
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        thread.join(timeout=10)
        server.server_close()
        client.close()
