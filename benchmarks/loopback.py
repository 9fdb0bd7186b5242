"""One retrieval turn in-process vs through ``HostedBackend`` → ``nams-local serve``.

The same seeded store answers both: first the ``SQLiteBackend`` directly, then the hosted
REST client talking HTTP to the local server (uvicorn in a thread on a loopback port,
serving that very store), and, for reference, the same client through
``httpx.ASGITransport`` (the app in-process, no socket). Turns alternate between the
paths, query strings never repeat, and every HTTP request is counted, so the ratio and the
request budget of a turn come from one run on one machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import socket
import statistics
import threading
import time
from typing import Any

import httpx

from backends.hosted import HostedBackend
from backends.sqlite import SQLiteBackend
from nams_local.embeddings import BaseEmbedder, HashingEmbedder, default_embedder
from nams_local.models import NewMessage
from nams_local.retrieval import RetrievalOptions, retrieve_memories
from nams_local.scope import Scope

from . import _workload
from ._common import add_output_options, say

__all__ = ["main"]

KEY = "bench-key"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks loopback",
        description="A retrieval turn in-process vs over loopback HTTP (nams-local serve).",
    )
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--conversations-per-user", type=int, default=5)
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--entities", type=int, default=300)
    parser.add_argument("--turns", type=int, default=200, help="per path")
    parser.add_argument("--warmup", type=int, default=10, help="per path")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--embedder", choices=("default", "hashing"), default="default")
    add_output_options(parser)
    return parser


async def _build(
    backend: SQLiteBackend, work: _workload.Workload, rng: random.Random
) -> list[tuple[str, str]]:
    """Store the workload; return the (user, conversation) pairs to ask from."""
    pairs: list[tuple[str, str]] = []
    for spec in work.conversations:
        conv = await backend.create_conversation(spec.user_id, {"topic": spec.topic})
        pairs.append((spec.user_id, conv.id))
        for batch in _workload.chunks(spec.turns, 100):
            await backend.add_messages(
                conv.id, [NewMessage(role=t.role, content=t.content) for t in batch]
            )
        await backend.record_step(conv.id, f"talked about {spec.topic}", "direct response")
    ids = [(await backend.add_entity(e.name, e.type, e.description)).id for e in work.entities]
    for source in ids:
        await backend.add_relationship(source, rng.choice(ids), "RELATED_TO")
    return pairs


class LoopbackServer:
    """uvicorn serving ``app`` on a free loopback port, in a thread."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = int(sock.getsockname()[1])
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

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
                    raise RuntimeError("the loopback server did not start")
                self.thread.join(timeout=0.02)

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def _counting_transport(inner: httpx.AsyncBaseTransport, counter: list[int]) -> Any:
    class Counting(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            counter[0] += 1
            return await inner.handle_async_request(request)

        async def aclose(self) -> None:
            await inner.aclose()

    return Counting()


def _summary(ms: list[float], requests: list[int] | None) -> dict[str, Any]:
    ordered = sorted(ms)

    def pct(p: float) -> float:
        return ordered[min(len(ordered) - 1, round(p * (len(ordered) - 1)))]

    out: dict[str, Any] = {
        "n": len(ms),
        "p50_ms": pct(0.5),
        "p95_ms": pct(0.95),
        "mean_ms": statistics.fmean(ms),
    }
    if requests is not None:
        out["http_requests_per_turn"] = statistics.fmean(requests)
    return out


async def _run(args: argparse.Namespace) -> dict[str, Any]:
    from nams_local.server import create_app

    rng = random.Random(args.seed)
    work = _workload.generate(
        users=args.users,
        conversations_per_user=args.conversations_per_user,
        messages=args.messages,
        entities=args.entities,
        seed=args.seed,
    )
    embedder: BaseEmbedder = default_embedder() if args.embedder == "default" else HashingEmbedder()
    root = SQLiteBackend(":memory:", embedder=embedder)
    say(args, f"[loopback] building {args.messages} messages, {args.entities} entities")
    started = time.perf_counter()
    pairs = await _build(root, work, rng)
    build_s = time.perf_counter() - started
    app = create_app(root, api_keys={KEY: "default"})
    options = RetrievalOptions()
    seen: set[str] = set()
    results: dict[str, Any] = {}
    with LoopbackServer(app) as server:
        counters = {"loopback": [0], "asgi": [0]}
        loopback = HostedBackend(
            KEY,
            endpoint=server.endpoint,
            transport=_counting_transport(httpx.AsyncHTTPTransport(), counters["loopback"]),
        )
        asgi = HostedBackend(
            KEY,
            endpoint="http://testserver/v1",
            transport=_counting_transport(httpx.ASGITransport(app=app), counters["asgi"]),
        )
        for client in (loopback, asgi):
            await client.probe_capabilities()
        paths: dict[str, Any] = {"in-process": root, "loopback": loopback, "asgi": asgi}
        samples: dict[str, list[float]] = {name: [] for name in paths}
        requests: dict[str, list[int]] = {"loopback": [], "asgi": []}
        total = args.warmup + args.turns
        say(args, f"[loopback] measuring {args.turns} turns per path after {args.warmup} warm-up")
        for i in range(total):
            order = list(paths)
            rng.shuffle(order)  # no path always runs first (or right after another)
            for name in order:
                user, conv = rng.choice(pairs)
                (query,) = _workload.distinct_queries(rng, 1, seen)
                before = counters[name][0] if name in counters else 0
                t0 = time.perf_counter()
                hits = await retrieve_memories(
                    paths[name], Scope(user, conv), conv, query, 6, options
                )
                elapsed = (time.perf_counter() - t0) * 1000
                if i >= args.warmup:
                    samples[name].append(elapsed)
                    if name in counters:
                        requests[name].append(counters[name][0] - before)
                if not hits:
                    raise RuntimeError(f"a {name} turn found nothing: the workload is broken")
        await loopback.aclose()
        await asgi.aclose()
    await root.aclose()
    for name in paths:
        results[name] = _summary(samples[name], requests.get(name))
    base = results["in-process"]
    for name in ("loopback", "asgi"):
        results[name]["p50_ratio"] = results[name]["p50_ms"] / base["p50_ms"]
        results[name]["p95_ratio"] = results[name]["p95_ms"] / base["p95_ms"]
    return {
        "benchmark": "loopback",
        "machine": {
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "load_avg_at_end": list(os.getloadavg()),
        },
        "workload": {
            "users": args.users,
            "messages": args.messages,
            "entities": args.entities,
            "embedder": embedder.name,
            "build_seconds": build_s,
        },
        "paths": results,
    }


def render(result: dict[str, Any]) -> str:
    w = result["workload"]
    lines = [
        "nams-local benchmark: loopback",
        f"  machine   {result['machine']['cores']} cores, python {result['machine']['python']}, "
        f"load avg at end {' '.join(f'{x:.2f}' for x in result['machine']['load_avg_at_end'])}",
        f"  store     {w['messages']} messages / {w['users']} users, {w['entities']} entities, "
        f"embedder {w['embedder']} (in-memory SQLite, one store behind every path)",
        "  measured  one retrieval turn (retrieve_memories, limit 6, all five sources), a",
        "            distinct query per turn, paths interleaved in random order",
        "",
        "  path" + " " * 35 + "n     p50     p95    mean  ratio p50/p95  HTTP/turn",
    ]
    labels = {
        "in-process": "SQLiteBackend in-process",
        "loopback": "HostedBackend -> serve (loopback TCP)",
        "asgi": "HostedBackend -> app (ASGI, no socket)",
    }
    for name, label in labels.items():
        p = result["paths"][name]
        ratio = (
            f"{p['p50_ratio']:.2f}x/{p['p95_ratio']:.2f}x" if "p50_ratio" in p else "1.00x/1.00x"
        )
        http = f"{p['http_requests_per_turn']:.1f}" if "http_requests_per_turn" in p else "-"
        lines.append(
            f"  {label:<38}{p['n']:>4}{p['p50_ms']:>8.2f}{p['p95_ms']:>8.2f}"
            f"{p['mean_ms']:>8.2f}  {ratio:>13}  {http:>9}"
        )
    lines.append("  ratio: this path's latency / the in-process latency, in the same run")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result = asyncio.run(_run(args))
    print(render(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
        say(args, f"[loopback] results written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
