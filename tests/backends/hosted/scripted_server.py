"""A real HTTP server on a loopback port that answers from a script and records requests.

The hosted client's retry, header and error tests talk to it over real sockets, so what
they assert is what went over the wire. Each (method, path) has a queue of ``Reply``; the
last reply repeats. A reply can ``hold`` until the test releases it, which provokes a client
read timeout without sleeping on either side.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = ["Received", "Reply", "ScriptedServer", "scripted_server"]

#: A held reply gives up waiting after this long, so a broken test cannot hang the run.
_HOLD_LIMIT = 10.0


@dataclass
class Reply:
    status: int = 200
    #: JSON-encodable data, or raw bytes sent as they are.
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    #: Answer only once this event is set (or after ``_HOLD_LIMIT`` seconds).
    hold: threading.Event | None = None


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    at: float

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


class ScriptedServer:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._script: dict[tuple[str, str], list[Reply]] = defaultdict(list)
        self.received: list[Received] = []
        self._holds: list[threading.Event] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def script(self, method: str, path: str, *replies: Reply) -> None:
        with self._lock:
            self._script[(method.upper(), path)].extend(replies)
            self._holds.extend(r.hold for r in replies if r.hold is not None)

    def requests_to(self, method: str, path: str) -> list[Received]:
        with self._lock:
            return [r for r in self.received if r.method == method and r.path == path]

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        with self._lock:
            holds = list(self._holds)
        for hold in holds:
            hold.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _next_reply(self, method: str, path: str) -> Reply:
        with self._lock:
            queue = self._script.get((method, path))
            if not queue:
                return Reply(404, {"error": f"nothing scripted for {method} {path}"})
            return queue.pop(0) if len(queue) > 1 else queue[0]

    def _record(self, received: Received) -> None:
        with self._lock:
            self.received.append(received)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                split = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                server._record(
                    Received(
                        method=self.command,
                        path=split.path,
                        query=parse_qs(split.query),
                        headers={k.lower(): v for k, v in self.headers.items()},
                        body=body,
                        at=time.monotonic(),
                    )
                )
                reply = server._next_reply(self.command, split.path)
                if reply.hold is not None:
                    reply.hold.wait(_HOLD_LIMIT)
                payload = (
                    reply.body
                    if isinstance(reply.body, bytes)
                    else b""
                    if reply.body is None
                    else json.dumps(reply.body).encode()
                )
                try:
                    self.send_response(reply.status)
                    headers = {"Content-Type": "application/json", **reply.headers}
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    pass  # the client gave up (timeout) and closed the connection

            do_GET = do_POST = do_PUT = do_DELETE = _serve

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


@contextmanager
def scripted_server() -> Iterator[ScriptedServer]:
    server = ScriptedServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()
