"""``serve``'s HTTP protocol writes each plain response to the socket in one call
(``nams_local/server/one_write.py``): same bytes, half the ``write`` syscalls.

Counted, not assumed: ``/proc/self/task/<tid>/io`` counts every write-type syscall the
event loop's thread makes, and uvloop writes to a socket with ``write``/``writev``.
"""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import uvicorn
from fastapi import FastAPI
from fastapi.responses import Response, StreamingResponse

from nams_local.server import create_app
from nams_local.server.runtime import http_protocol
from nams_local.server.sockets import bind

from .support import bearer, wait_until_healthy

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="per-thread syscall counters are Linux's"
)

REQUESTS = 50


@contextmanager
def _serve(app: FastAPI) -> Iterator[tuple[int, threading.Thread]]:
    """``app`` under uvicorn with ``serve``'s protocol, in a thread; yields (port, thread)."""
    sock = bind("127.0.0.1", 0)
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="on", http=http_protocol()
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    port = sock.getsockname()[1]
    try:
        wait_until_healthy(f"http://127.0.0.1:{port}")
        yield port, thread
    finally:
        server.should_exit = True
        thread.join(timeout=20)
        sock.close()


def _writes(thread: threading.Thread) -> int:
    """Write-type syscalls the thread made so far."""
    io = Path(f"/proc/self/task/{thread.native_id}/io").read_text()
    return int(next(line for line in io.splitlines() if line.startswith("syscw:")).split()[1])


def _exchange(conn: socket.socket, request: bytes) -> bytes:
    """Send one keep-alive request; read its whole answer (by Content-Length or chunks)."""
    conn.sendall(request)
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.lower().split(b"\r\n")
    length = [int(line.split(b":")[1]) for line in lines if line.startswith(b"content-length:")]
    if length:
        while len(body) < length[0]:
            body += conn.recv(65536)
    else:  # chunked: until the last chunk
        while not body.endswith(b"0\r\n\r\n"):
            body += conn.recv(65536)
    return head + b"\r\n\r\n" + body


def _get(path: str, token: str | None = None) -> bytes:
    auth = f"authorization: {bearer(token)['Authorization']}\r\n" if token else ""
    return f"GET {path} HTTP/1.1\r\nhost: t\r\n{auth}\r\n".encode()


def test_a_response_is_one_write_of_the_same_bytes(tmp_path: Path) -> None:
    app = create_app(db=tmp_path / "one.db", embeddings=False)
    with _serve(app) as (port, thread), socket.create_connection(("127.0.0.1", port)) as conn:
        first = _exchange(conn, _get("/v1/conversations", "one-write"))
        assert first.startswith(b"HTTP/1.1 200 OK\r\n") and first.endswith(b'{"conversations":[]}')
        before = _writes(thread)
        answers = [_exchange(conn, _get("/v1/conversations", "one-write")) for _ in range(REQUESTS)]
        spent = _writes(thread) - before
    # uvicorn's own protocol writes the headers and the body apart: 2 per response.
    assert spent < 1.5 * REQUESTS, f"{spent} writes for {REQUESTS} responses"
    assert all(answer.partition(b"\r\n\r\n")[2] == b'{"conversations":[]}' for answer in answers)
    assert all(answer.count(b"HTTP/1.1 200 OK\r\n") == 1 for answer in answers)


def test_a_head_request_is_answered_and_the_connection_goes_on() -> None:
    """uvicorn writes no body for ``HEAD``: the held headers go out when the response
    completes (they were held until the connection closed, so the client never had an
    answer), and the next request on the same connection is answered as usual."""
    app = FastAPI()

    @app.api_route("/healthz", methods=["GET", "HEAD"])
    async def healthz() -> Response:
        return Response(b"ok")

    with _serve(app) as (port, _), socket.create_connection(("127.0.0.1", port)) as conn:
        conn.settimeout(10)
        conn.sendall(b"HEAD /healthz HTTP/1.1\r\nhost: t\r\n\r\n")
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += conn.recv(65536)
        assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and answer.endswith(b"\r\n\r\n")
        assert b"content-length: 2\r\n" in answer.lower()
        after = _exchange(conn, _get("/healthz"))
        assert after.startswith(b"HTTP/1.1 200 OK\r\n") and after.endswith(b"\r\n\r\nok")
        # Pipelined: the HEAD's cycle completes while the protocol's current cycle is the
        # GET's; the HEAD's own headers still go out, before the GET's answer.
        conn.sendall(b"HEAD /healthz HTTP/1.1\r\nhost: t\r\n\r\n" + _get("/healthz"))
        pipelined = b""
        while not pipelined.endswith(b"\r\n\r\nok"):
            pipelined += conn.recv(65536)
        head_answer, _, get_answer = pipelined.partition(b"\r\n\r\n")
        assert head_answer.startswith(b"HTTP/1.1 200 OK\r\n")
        assert get_answer.startswith(b"HTTP/1.1 200 OK\r\n")


def test_a_streamed_answer_and_an_empty_one_keep_their_framing() -> None:
    app = FastAPI()

    @app.get("/healthz")
    async def healthz() -> Response:
        return Response(b"ok")

    @app.get("/empty")
    async def no_content() -> Response:
        return Response(status_code=204)

    @app.get("/stream")
    async def stream() -> StreamingResponse:
        async def parts() -> Iterator[bytes]:  # type: ignore[misc]
            for part in (b"alpha", b"beta", b"gamma"):
                yield part

        return StreamingResponse(parts(), media_type="text/plain")

    with _serve(app) as (port, _), socket.create_connection(("127.0.0.1", port)) as conn:
        streamed = _exchange(conn, _get("/stream"))
        head, _, body = streamed.partition(b"\r\n\r\n")
        assert b"transfer-encoding: chunked" in head
        assert body == b"5\r\nalpha\r\n4\r\nbeta\r\n5\r\ngamma\r\n0\r\n\r\n"
        conn.sendall(_get("/empty"))
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += conn.recv(65536)
        assert answer.startswith(b"HTTP/1.1 204 No Content\r\n")
        assert answer.endswith(b"\r\n\r\n")
