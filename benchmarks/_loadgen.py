"""The load generator of ``python -m benchmarks load``: one process of keep-alive HTTP clients.

Run as ``python -m benchmarks._loadgen`` with a JSON plan on stdin; it prints one JSON
document of samples on stdout. The benchmark starts one or two of these beside the server
so the client's CPU cost is spread over its own processes (its own GIL) and measured: each
reports the CPU seconds it spent inside the timed window.

The HTTP/1.1 client is a few lines over ``asyncio`` streams on purpose: a request here costs
tens of microseconds of client CPU where ``httpx`` costs several hundred, and on a 2-core
machine shared with the server that difference is the harness ceiling. It speaks just what
the benchmark needs — one keep-alive connection per virtual client, JSON bodies, responses
framed by ``Content-Length`` or chunked — and reconnects when the server closes.

Everything is bounded: each client stops at the window's end or after ``max_requests``,
each request times out after ``timeout`` seconds (a timed-out connection is dropped, which
is also how a client "goes away" from a slow query), and only 127.0.0.1 is ever dialled.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import resource
import socket
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "FAILED",
    "HOSTILE_KINDS",
    "NORMAL_MIX",
    "OPS",
    "TIMED_OUT",
    "Connection",
    "HttpError",
    "main",
    "run_plan",
]

HOST = "127.0.0.1"

#: Operation names, in the order their index appears in the samples.
OPS = (
    "add_message",
    "search",
    "list_conversations",
    "get_conversation",
    "list_messages",
    "healthz",
    "cypher_heavy",
    "bulk_max",
    "search_max",
    "big_body",
)
#: The issue's mix: 40 % add, 40 % search, 20 % list/get (split evenly over the three).
NORMAL_MIX = (
    ("add_message", 40.0),
    ("search", 40.0),
    ("list_conversations", 20.0 / 3),
    ("get_conversation", 20.0 / 3),
    ("list_messages", 20.0 / 3),
)
#: What the hostile tenant's clients do, cycled over its clients (Cypher the most often).
HOSTILE_KINDS = ("cypher_heavy", "bulk_max", "cypher_heavy", "search_max", "cypher_heavy",
                 "big_body", "cypher_heavy", "bulk_max")  # fmt: skip
#: The status recorded for a request without an HTTP answer: the client gave up after its
#: timeout, or the connection failed (refused, reset, cut short).
TIMED_OUT = -1
FAILED = 0
HEAVY_CYPHER = "MATCH (a:Entity) MATCH (b:Entity) MATCH (c:Entity) RETURN count(*)"


class HttpError(Exception):
    """The connection failed or the server sent something this client cannot frame."""


class Connection:
    """One keep-alive HTTP/1.1 connection to ``127.0.0.1:port``, reopened when closed."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.host_header = f"Host: {HOST}:{port}\r\n".encode()

    async def _open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(HOST, self.port, limit=1 << 20)
        sock = self.writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None

    async def request(
        self, method: str, path: str, token: str | None, body: bytes | None = None
    ) -> tuple[int, bytes]:
        """Send one request and read its whole response: ``(status, body)``."""
        if self.writer is None:
            await self._open()
        assert self.reader is not None and self.writer is not None
        head = [f"{method} {path} HTTP/1.1\r\n".encode(), self.host_header]
        if token is not None:
            head.append(f"Authorization: Bearer {token}\r\n".encode())
        if body is not None:
            head.append(
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n".encode()
            )
        head.append(b"\r\n")
        self.writer.write(b"".join(head) + (body or b""))
        if body is not None and len(body) > 65536:
            await self.writer.drain()
        try:
            raw = await self.reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
            self.close()
            raise HttpError("connection closed before a response") from exc
        lines = raw.split(b"\r\n")
        try:
            status = int(lines[0].split(b" ", 2)[1])
        except (IndexError, ValueError) as exc:
            self.close()
            raise HttpError(f"bad status line {lines[0][:80]!r}") from exc
        length: int | None = None
        chunked = close = False
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value.strip())
            elif name == b"transfer-encoding":
                chunked = b"chunked" in value.lower()
            elif name == b"connection":
                close = value.strip().lower() == b"close"
        payload = await self._body(length, chunked)
        if close:
            self.close()
        return status, payload

    async def _body(self, length: int | None, chunked: bool) -> bytes:
        assert self.reader is not None
        try:
            if chunked:
                parts: list[bytes] = []
                while True:
                    size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
                    if size == 0:
                        await self.reader.readuntil(b"\r\n")
                        return b"".join(parts)
                    parts.append(await self.reader.readexactly(size))
                    await self.reader.readexactly(2)
            if length is None:  # no framing: the body runs to the end of the connection
                data = await self.reader.read()
                self.close()
                return data
            return await self.reader.readexactly(length)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
            self.close()
            raise HttpError("response body cut short") from exc


@dataclass
class Client:
    """One virtual client of the plan: a tenant's token, its conversations, what it runs."""

    index: int
    token: str
    role: str  # "normal", "healthz" or one of HOSTILE_KINDS
    conversations: list[str]
    seed: int


@dataclass
class Results:
    samples: list[list[float]] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)


def _picker(rng: random.Random, role: str) -> Callable[[], str]:
    if role == "normal":
        names = [name for name, _ in NORMAL_MIX]
        weights = [weight for _, weight in NORMAL_MIX]
        return lambda: rng.choices(names, weights)[0]
    return lambda: role


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


class Payloads:
    """Request bodies: drawn from the plan's text pools, or built to sit at a limit."""

    def __init__(self, plan: dict[str, Any]) -> None:
        self.messages: list[str] = plan["messages"]
        # Added messages are taken in turn, not drawn: the pool holds distinct texts, so no
        # add repeats an earlier one until the pool is used up, as in a real conversation
        # (drawn with replacement, a quarter of the adds repeated a text and the store's
        # cache of embedded texts answered them without a model run).
        self._next_message = itertools.cycle(self.messages)
        self.queries: list[str] = plan["queries"]
        limits = plan.get("limits", {})
        body_limit = int(limits.get("max_body_bytes", 1 << 20))
        bulk = int(limits.get("max_bulk", 100))
        self.search_limit = int(limits.get("max_search_limit", 200))
        filler = " ".join(self.messages[:200])
        # A bulk of ``bulk`` long messages whose JSON body fills ~90 % of the body limit.
        per_message = max(64, int(body_limit * 0.9) // bulk - 40)
        long_text = (filler * (per_message // max(len(filler), 1) + 1))[:per_message]
        # Numbered, so no two messages of a bulk are the same text.
        self.bulk_max = _json(
            {"messages": [{"role": "user", "content": f"{i} {long_text}"} for i in range(bulk)]}
        )
        big = max(64, body_limit - 4096)
        self.big_body = _json(
            {"role": "user", "content": (filler * (big // len(filler) + 1))[:big]}
        )
        words = " ".join(self.queries) + " "
        long_query = (words * (2000 // len(words) + 1))[:2000]
        self.search_max = _json({"query": long_query, "limit": self.search_limit})
        self.cypher = _json({"cypher": plan.get("cypher", HEAVY_CYPHER)})

    def add(self, rng: random.Random) -> bytes:
        role = "user" if rng.random() < 0.5 else "assistant"
        return _json({"role": role, "content": next(self._next_message)})

    def search(self, rng: random.Random) -> bytes:
        return _json({"query": rng.choice(self.queries), "limit": 10})


async def _one(
    conn: Connection, op: str, client: Client, rng: random.Random, payloads: Payloads
) -> tuple[int, bytes]:
    conv = rng.choice(client.conversations) if client.conversations else "missing"
    base = f"/v1/conversations/{conv}"
    token = client.token
    if op == "add_message":
        return await conn.request("POST", f"{base}/messages", token, payloads.add(rng))
    if op == "search":
        return await conn.request("POST", f"{base}/search", token, payloads.search(rng))
    if op == "list_conversations":
        return await conn.request("GET", "/v1/conversations?limit=50", token)
    if op == "get_conversation":
        return await conn.request("GET", base, token)
    if op == "list_messages":
        return await conn.request("GET", f"{base}/messages?limit=50", token)
    if op == "healthz":
        return await conn.request("GET", "/healthz", None)
    if op == "cypher_heavy":
        return await conn.request("POST", "/v1/query", token, payloads.cypher)
    if op == "bulk_max":
        return await conn.request("POST", f"{base}/messages/bulk", token, payloads.bulk_max)
    if op == "search_max":
        return await conn.request("POST", f"{base}/search", token, payloads.search_max)
    if op == "big_body":
        return await conn.request("POST", f"{base}/messages", token, payloads.big_body)
    raise ValueError(f"unknown operation {op!r}")


async def _connect(conn: Connection, timeout: float) -> None:
    """Open the connection before the window, so connecting is not timed."""
    try:
        await asyncio.wait_for(conn.request("GET", "/healthz", None), timeout)
    except (OSError, HttpError, TimeoutError):
        conn.close()


async def _client_loop(
    client: Client,
    conn: Connection,
    plan: dict[str, Any],
    payloads: Payloads,
    results: Results,
    start_perf: float,
) -> None:
    rng = random.Random(client.seed)
    pick = _picker(rng, client.role)
    timeout = float(plan["timeout"])
    end_perf = start_perf + float(plan["seconds"])
    try:
        await asyncio.sleep(max(0.0, start_perf - time.perf_counter()))
        for _ in range(int(plan["max_requests"])):
            begun = time.perf_counter()
            if begun >= end_perf:
                break
            op = pick()
            status = FAILED
            try:
                status, _ = await asyncio.wait_for(_one(conn, op, client, rng, payloads), timeout)
            except TimeoutError:
                status = TIMED_OUT
                conn.close()  # the client goes away, as a real one would
                results.errors[f"{op}: timeout after {timeout:g}s"] += 1
            except (OSError, HttpError) as exc:
                conn.close()
                results.errors[f"{op}: {type(exc).__name__}"] += 1
                await asyncio.sleep(0.1)  # a dead server must not become a busy loop
            done = time.perf_counter()
            results.samples.append(
                [
                    OPS.index(op),
                    status,
                    round(begun - start_perf, 6),
                    round((done - begun) * 1000.0, 3),
                    client.index,
                ]
            )
    finally:
        conn.close()


async def run_plan(plan: dict[str, Any], start_at: Callable[[], float]) -> dict[str, Any]:
    """Connect every client of ``plan``, ask ``start_at()`` for the window's wall-clock
    start (the parent hands all its processes the same one), then run the window; the
    samples and this process's CPU seconds inside the window."""
    payloads = Payloads(plan)
    clients = [Client(**c) for c in plan["clients"]]
    conns = [Connection(int(plan["port"])) for _ in clients]
    await asyncio.gather(*(_connect(conn, float(plan["timeout"])) for conn in conns))
    start_wall = await asyncio.get_running_loop().run_in_executor(None, start_at)
    # perf_counter at the wall-clock start, so every client times against the same origin.
    start_perf = time.perf_counter() + max(0.0, start_wall - time.time())
    await asyncio.sleep(max(0.0, start_perf - time.perf_counter()))
    before = resource.getrusage(resource.RUSAGE_SELF)
    results = Results()
    await asyncio.gather(
        *(
            _client_loop(client, conn, plan, payloads, results, start_perf)
            for client, conn in zip(clients, conns, strict=True)
        )
    )
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "ops": list(OPS),
        "samples": results.samples,
        "errors": dict(results.errors),
        "cpu_seconds": cpu,
        "wall_seconds": time.perf_counter() - start_perf,
        "clients": len(clients),
    }


def _handshake() -> float:
    """Say "ready" on stdout, then read the window's start (epoch seconds) from stdin."""
    print("ready", flush=True)
    line = sys.stdin.readline()
    return float(line) if line.strip() else time.time()


def main() -> int:
    plan = json.loads(sys.stdin.readline())
    out = asyncio.run(run_plan(plan, _handshake))
    json.dump(out, sys.stdout)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
