"""The load generator's HTTP client and the load report's arithmetic, apart from a full run.

The client is checked against a real loopback socket server that frames its answers in
each of the ways HTTP/1.1 allows (``Content-Length``, chunked, ``Connection: close``), and
the figures against samples whose percentiles and status counts are known.
"""

from __future__ import annotations

import asyncio
import json
import random

import pytest

from benchmarks._loadgen import (
    FAILED,
    HEAVY_CYPHER,
    OPS,
    TIMED_OUT,
    Connection,
    HttpError,
    Payloads,
)
from benchmarks._loadstats import summarize

RESPONSES = [
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
    b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"3\r\nabc\r\n2;x=1\r\nde\r\n0\r\n\r\n",
    b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
    b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nnew",  # on a fresh connection
]


async def test_client_frames_each_kind_of_response_and_reconnects() -> None:
    received: list[bytes] = []
    connections = 0
    answers = iter(RESPONSES)

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                received.append(head + await reader.readexactly(length))
                answer = next(answers)
                writer.write(answer)
                await writer.drain()
                if b"Connection: close" in answer:
                    break
        except asyncio.IncompleteReadError:
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    conn = Connection(port)
    try:
        assert await conn.request("GET", "/healthz", None) == (200, b"hello")
        assert await conn.request("POST", "/v1/x", "tok", b'{"a":1}') == (201, b"abcde")
        assert await conn.request("POST", "/v1/x", "tok", b"{}") == (413, b"{}")
        assert await conn.request("GET", "/again", "tok") == (200, b"new")
    finally:
        conn.close()
        server.close()
        await server.wait_closed()
    assert connections == 2  # kept alive until the server said close, then reconnected
    assert received[1].startswith(b"POST /v1/x HTTP/1.1\r\n")
    assert b"Authorization: Bearer tok\r\n" in received[1] and received[1].endswith(b'{"a":1}')
    assert b"Authorization" not in received[0]


async def test_client_reports_a_connection_cut_mid_body() -> None:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    conn = Connection(server.sockets[0].getsockname()[1])
    try:
        with pytest.raises(HttpError, match="cut short"):
            await conn.request("GET", "/", None)
        assert conn.writer is None  # dropped, so the next request reconnects
    finally:
        conn.close()
        server.close()
        await server.wait_closed()


def test_summarize_counts_statuses_and_interpolates_percentiles() -> None:
    add, search = OPS.index("add_message"), OPS.index("search")
    samples = [[add, 201, 0.1 * i, float(10 * (i + 1)), 0] for i in range(10)]  # 10..100 ms
    samples += [
        [search, 200, 1.0, 5.0, 1],
        [search, 503, 1.0, 7.0, 1],
        [search, FAILED, 2.0, 1.0, 1],  # refused at once: an error, not a fast request
        [search, TIMED_OUT, 9.0, 30_000.0, 1],  # the client gave up: counts at its timeout
    ]
    figures = summarize(samples, seconds=10.0)
    adds = figures["operations"]["add_message"]
    assert (adds["requests"], adds["ok"], adds["non_2xx"], adds["errors"]) == (10, 10, 0, 0)
    assert adds["p50_ms"] == pytest.approx(55.0) and adds["p95_ms"] == pytest.approx(95.5)
    assert adds["max_ms"] == 100.0
    searches = figures["operations"]["search"]
    assert searches["statuses"] == {"200": 1, "503": 1, "error": 1, "timeout": 1}
    assert (searches["ok"], searches["non_2xx"], searches["errors"]) == (1, 1, 2)
    assert searches["timeouts"] == 1
    assert searches["p50_ms"] == 7.0 and searches["max_ms"] == 30_000.0
    overall = figures["overall"]
    # neither the failed nor the timed-out request answered, so 12 count toward requests/s
    assert overall["requests"] == 14 and overall["answered_in_window"] == 12
    assert overall["requests_per_second"] == pytest.approx(1.2)
    assert list(figures["operations"]) == ["add_message", "search"]


def test_hostile_bodies_sit_just_under_the_limits() -> None:
    limit = 1024 * 1024
    payloads = Payloads(
        {
            "messages": ["I am flying to Lisbon on Monday.", "Try the ramen near the station."],
            "queries": ["where is the ramen"],
            "limits": {"max_body_bytes": limit, "max_bulk": 100, "max_search_limit": 200},
        }
    )
    assert 0.95 * limit < len(payloads.big_body) < limit
    bulk = json.loads(payloads.bulk_max)["messages"]
    assert len(bulk) == 100 and len({m["content"] for m in bulk}) == 100
    assert 0.85 * limit < len(payloads.bulk_max) < limit
    search = json.loads(payloads.search_max)
    assert search["limit"] == 200 and len(search["query"]) == 2000
    assert json.loads(payloads.cypher)["cypher"] == HEAVY_CYPHER


def test_added_messages_do_not_repeat_until_the_pool_is_used_up() -> None:
    """Drawn with replacement, a quarter of a window's adds repeated a text, which the
    store's cache of embedded texts answered without a model run (a flattering figure)."""
    pool = [f"message number {i}" for i in range(50)]
    payloads = Payloads({"messages": pool, "queries": ["q"]})
    rng = random.Random(3)
    added = [json.loads(payloads.add(rng))["content"] for _ in range(50)]
    assert sorted(added) == sorted(pool)
