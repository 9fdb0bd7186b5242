"""``nams-local serve`` under concurrent load: throughput and latency of a small team's mix.

One run starts the real server (``nams-local serve`` in its own process, on a free loopback
port, over a temporary database, the default embedder unless ``--no-embeddings``), seeds
``--tenants`` workspaces (open mode: one bearer token = one workspace; a few users,
conversations and messages each), then drives ``--clients`` concurrent keep-alive clients
for ``--seconds`` with the issue-12 mix, spread evenly over the tokens:

- 40 % add message (``POST /v1/conversations/{id}/messages``),
- 40 % conversation search (``POST /v1/conversations/{id}/search``, limit 10),
- 20 % list/get (``GET /v1/conversations``, ``GET /v1/conversations/{id}``,
  ``GET /v1/conversations/{id}/messages``), a third each.

It reports requests/s, per-operation and overall p50/p95/p99, every non-2xx answer and
transport error, and the server's CPU per request (its process, and its Cypher worker
processes apart), read from ``/proc`` around the window: on a busy machine requests/s moves
with whatever else runs, while the CPU a request costs hardly does. Targets (issue 12):
with embeddings >= 250 requests/s, p95 <= 300 ms and 0 non-2xx; with ``--no-embeddings``
>= 1,000 requests/s.

The client must not be what is measured: it runs in ``--client-processes`` processes of its
own (``benchmarks._loadgen``, raw HTTP/1.1 over asyncio), each reporting the CPU it spent,
and a short ``/healthz`` phase before the window measures what the harness can push against
a trivial endpoint from one generator process on this machine (its ceiling, printed
beside the figures, with the client CPU per request there).

``--adversarial``: tenant 0 turns hostile and runs at every limit at once — the Cypher
cross product ``MATCH (a:Entity) MATCH (b:Entity) MATCH (c:Entity) RETURN count(*)`` over
``--hostile-entities`` entities in its workspace, bulks of 100 long messages, searches at the
maximal limit, single messages near the body limit — while the other tenants run the normal
mix; it reports the other tenants' p95 (target <= 200 ms) and what the hostile tenant got.
Just before that window the same other clients run the mix alone on the same server for
``--baseline-seconds`` (the hostile tenant idle): their p95 there is what they get with no
hostile tenant at all, so the report says how much the hostile tenant added, measured in
one run, and whether the target is below that floor on this machine.

``python -m benchmarks load --help`` for the options; ``--smoke`` for a few-second check.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from nams_local.backend import MAX_BULK_MESSAGES, MAX_LIST_LIMIT

from ._common import positive, say
from ._http import wait_extracted
from ._loadgen import HEAVY_CYPHER, HOSTILE_KINDS, NORMAL_MIX
from ._loadpool import run_generators
from ._loadstats import baseline_figures, ceiling_figures, load_figures
from ._report import BarGroup, add_report_options, machine, publish
from ._serve import ServeProcess, add_serve_options
from ._workload import distinct_queries, generate

__all__ = ["main"]

NAME = "load"
TARGET_RPS = 250.0
TARGET_RPS_NO_EMBEDDINGS = 1000.0
TARGET_P95_MS = 300.0
TARGET_OTHERS_P95_MS = 200.0
#: ``nams-local serve``'s default ``--max-body-bytes`` (the hostile bodies sit just under it).
DEFAULT_BODY_LIMIT = 1024 * 1024
SMOKE_DEFAULTS: dict[str, Any] = {
    "seconds": 3.0,
    "clients": 8,
    "client_processes": 1,
    "users_per_tenant": 1,
    "conversations_per_user": 1,
    "seed_messages": 2,
    "ceiling_seconds": 1.0,
    "hostile_clients": 4,
    "hostile_entities": 30,
    "baseline_seconds": 1.0,
    "no_embeddings": True,
    "timeout": 15.0,
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"python -m benchmarks {NAME}",
        description="Concurrent clients against nams-local serve: requests/s and latency.",
    )
    w = parser.add_argument_group("workload")
    w.add_argument("--seconds", type=float, default=45.0, help="timed window, default 45")
    w.add_argument("--clients", type=positive, default=32, help="concurrent clients, default 32")
    w.add_argument("--tenants", type=positive, default=8, help="bearer tokens, default 8")
    w.add_argument("--users-per-tenant", type=positive, default=3, help="default 3")
    w.add_argument("--conversations-per-user", type=positive, default=2, help="default 2")
    w.add_argument(
        "--seed-messages", type=positive, default=10, help="messages per seeded conversation"
    )
    w.add_argument("--seed", type=int, default=42, help="default 42")
    w.add_argument(
        "--timeout", type=float, default=30.0, help="per-request timeout, seconds (default 30)"
    )
    a = parser.add_argument_group("adversarial")
    a.add_argument(
        "--adversarial",
        action="store_true",
        help="tenant 0 runs at every limit at once while the others run the mix",
    )
    a.add_argument(
        "--hostile-clients", type=positive, default=8, help="the hostile tenant's clients"
    )
    a.add_argument(
        "--hostile-entities",
        type=positive,
        default=2000,
        help="entities seeded in the hostile workspace (the Cypher cross product's input)",
    )
    a.add_argument(
        "--baseline-seconds",
        type=float,
        default=20.0,
        help="the other tenants' mix alone, on the same server just before the hostile "
        "window (their p95 with no hostile tenant); 0 = skip; default 20",
    )
    c = parser.add_argument_group("client and server")
    c.add_argument(
        "--client-processes",
        type=positive,
        default=2,
        help="load generator processes (the clients are spread over them), default 2",
    )
    c.add_argument(
        "--ceiling-seconds",
        type=float,
        default=3.0,
        help="length of the /healthz phase that measures the harness ceiling (0 = skip)",
    )
    add_serve_options(c, extraction=("sync", "background", "off"))
    c.add_argument(
        "--server-max-rss-mb",
        type=positive,
        default=3000,
        help="kill the server when its RSS passes this (a runaway must not take the machine "
        "down); default 3000",
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="a few seconds, a tiny seed, --no-embeddings, 8 clients in one process",
    )
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    add_report_options(parser)
    return parser


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """``--smoke`` changes the defaults; options given explicitly still win."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.smoke:
        parser.set_defaults(**SMOKE_DEFAULTS)
        args = parser.parse_args(argv)
    for name in ("seconds", "timeout"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name} must be positive")
    if args.ceiling_seconds < 0:
        parser.error("--ceiling-seconds must not be negative")
    if args.baseline_seconds < 0:
        parser.error("--baseline-seconds must not be negative")
    if args.adversarial and args.tenants < 2:
        parser.error("--adversarial needs at least 2 tenants (one hostile, one measured)")
    return args


# -- seeding -------------------------------------------------------------------------------
def _tokens(args: argparse.Namespace) -> list[str]:
    return [f"load-bench-tenant-{i}" for i in range(args.tenants)]


async def _seed_tenant(
    client: httpx.AsyncClient, args: argparse.Namespace, token: str, index: int
) -> list[str]:
    """Users, conversations and messages of one workspace; its conversation ids."""
    headers = {"Authorization": f"Bearer {token}"}
    work = generate(
        users=args.users_per_tenant,
        conversations_per_user=args.conversations_per_user,
        messages=args.users_per_tenant * args.conversations_per_user * args.seed_messages,
        entities=0,
        seed=args.seed + index,
    )
    ids: list[str] = []
    for spec in work.conversations:
        created = await client.post(
            "/v1/conversations",
            json={"userId": spec.user_id, "metadata": {"topic": spec.topic}},
            headers=headers,
        )
        created.raise_for_status()
        conv = str(created.json()["id"])
        for i in range(0, len(spec.turns), MAX_BULK_MESSAGES):
            chunk = spec.turns[i : i + MAX_BULK_MESSAGES]
            body = {"messages": [{"role": t.role, "content": t.content} for t in chunk]}
            added = await client.post(
                f"/v1/conversations/{conv}/messages/bulk", json=body, headers=headers
            )
            added.raise_for_status()
        ids.append(conv)
    return ids


async def _seed_entities(client: httpx.AsyncClient, token: str, n: int, seed: int) -> int:
    """``n`` entities in the hostile workspace, 8 requests at a time; how many it holds."""
    headers = {"Authorization": f"Bearer {token}"}
    entities = list(
        generate(users=1, conversations_per_user=1, messages=0, entities=n, seed=seed).entities
    )
    queue = asyncio.Queue[tuple[str, str, str]]()
    for e in entities:
        queue.put_nowait((e.name, e.type, e.description))

    async def worker() -> None:
        while not queue.empty():
            name, type_, description = queue.get_nowait()
            answer = await client.post(
                "/v1/entities",
                json={"name": name, "type": type_, "description": description},
                headers=headers,
            )
            answer.raise_for_status()

    await asyncio.gather(*(worker() for _ in range(8)))
    counted = await client.post(
        "/v1/query",
        json={"cypher": "MATCH (e:Entity) RETURN count(e) AS n"},
        headers=headers,
    )
    counted.raise_for_status()
    rows = counted.json().get("rows") or [{}]
    first = rows[0]
    value = first.get("n") if isinstance(first, dict) else first[0]
    return int(value) if value is not None else 0


async def _settle_conversation(
    client: httpx.AsyncClient, token: str, conv: str, limit: float
) -> bool:
    """Wait until one seeded conversation's background work is done; whether it was.

    Its extraction units all finished (polled, ``wait_extracted``), then one conversation
    search, which waits for the conversation's queued message vectors (read-your-writes),
    so the window does not pay for the seed's embedding and extraction.
    """
    headers = {"Authorization": f"Bearer {token}"}
    if await wait_extracted(client, [conv], limit, headers):
        return False
    searched = await client.post(
        f"/v1/conversations/{conv}/search", json={"query": "settle", "limit": 1}, headers=headers
    )
    searched.raise_for_status()
    return True


async def settle(
    args: argparse.Namespace, base_url: str, seeded: dict[str, Any], limit: float = 180.0
) -> dict[str, Any]:
    """Let the seed's background work (extraction, message vectors) finish before the window.

    Without it the first seconds of the window embed and extract the 480 seeded messages
    (measured: searches in seeded conversations waited for them, and the server's CPU per
    request counted them), which is the seed's cost, not the mix's.
    """
    start = time.perf_counter()
    async with httpx.AsyncClient(base_url=base_url, timeout=120.0) as client:
        jobs = [
            _settle_conversation(client, token, conv, limit)
            for token, ids in seeded["conversations"].items()
            for conv in ids
        ]
        settled = await asyncio.gather(*jobs)
    return {"seconds": time.perf_counter() - start, "all_settled": all(settled)}


async def seed(args: argparse.Namespace, base_url: str) -> dict[str, Any]:
    """Every tenant's conversations (and the hostile tenant's entities); the seeding cost."""
    tokens = _tokens(args)
    start = time.perf_counter()
    async with httpx.AsyncClient(base_url=base_url, timeout=120.0) as client:
        convs = await asyncio.gather(
            *(_seed_tenant(client, args, token, i) for i, token in enumerate(tokens))
        )
        seeded = time.perf_counter()
        entities = None
        if args.adversarial:
            say(args, f"[{NAME}] seeding {args.hostile_entities} entities in the hostile workspace")
            entities = await _seed_entities(client, tokens[0], args.hostile_entities, args.seed)
    done = time.perf_counter()
    return {
        "tokens": tokens,
        "conversations": {token: ids for token, ids in zip(tokens, convs, strict=True)},
        "messages_per_tenant": args.users_per_tenant
        * args.conversations_per_user
        * args.seed_messages,
        "seconds": seeded - start,
        "hostile_entities": entities,
        "hostile_entities_seconds": done - seeded if args.adversarial else None,
    }


async def count_messages(base_url: str, seeded: dict[str, Any]) -> dict[str, Any]:
    """After the window: the messages each seeded conversation holds, read back over HTTP
    (up to the list limit), so a run shows its writes landed and not just that they were
    answered."""
    total, capped = 0, False
    async with httpx.AsyncClient(base_url=base_url, timeout=120.0) as client:
        for token, ids in seeded["conversations"].items():
            headers = {"Authorization": f"Bearer {token}"}
            for conv in ids:
                answer = await client.get(
                    f"/v1/conversations/{conv}/messages",
                    params={"limit": MAX_LIST_LIMIT},
                    headers=headers,
                )
                answer.raise_for_status()
                n = len(answer.json()["messages"])
                total += n
                capped = capped or n >= MAX_LIST_LIMIT
    return {"messages": total, "capped_at_list_limit": capped}


# -- the load generator processes ----------------------------------------------------------
def _pools(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """Texts for added messages and search queries (the same vocabulary as the seed).

    The messages are distinct (about 34,000 of 40,000 generated): more than a 45 s window
    adds at 1,000 requests/s, so no added text repeats one (see ``_loadgen.Payloads``)."""
    work = generate(
        users=20, conversations_per_user=100, messages=40000, entities=0, seed=args.seed + 99
    )
    messages = list(dict.fromkeys(t.content for t in work.messages()))
    queries = distinct_queries(random.Random(args.seed + 7), 600, set())
    return messages, queries


def client_plan(args: argparse.Namespace, seeded: dict[str, Any]) -> list[dict[str, Any]]:
    """Every virtual client: its token, conversations and role (``normal`` or hostile)."""
    tokens: list[str] = seeded["tokens"]
    convs: dict[str, list[str]] = seeded["conversations"]
    measured = tokens[1:] if args.adversarial else tokens
    clients = [
        {
            "index": i,
            "token": measured[i % len(measured)],
            "role": "normal",
            "conversations": convs[measured[i % len(measured)]],
            "seed": args.seed * 1000 + i,
        }
        for i in range(args.clients)
    ]
    if args.adversarial:
        for j in range(args.hostile_clients):
            clients.append(
                {
                    "index": args.clients + j,
                    "token": tokens[0],
                    "role": HOSTILE_KINDS[j % len(HOSTILE_KINDS)],
                    "conversations": convs[tokens[0]],
                    "seed": args.seed * 1000 + args.clients + j,
                }
            )
    return clients


def base_plan(args: argparse.Namespace, port: int, seconds: float) -> dict[str, Any]:
    """What every generator process of one window is told besides its clients."""
    messages, queries = _pools(args)
    return {
        "port": port,
        "seconds": seconds,
        "timeout": args.timeout,
        # Bounded in count as well as time: more than any client can do in the window.
        "max_requests": int(seconds * 5000) + 10,
        "messages": messages,
        "queries": queries,
        "cypher": HEAVY_CYPHER,
        "limits": {
            "max_body_bytes": DEFAULT_BODY_LIMIT,
            "max_bulk": MAX_BULK_MESSAGES,
            "max_search_limit": MAX_LIST_LIMIT,
        },
    }


def _verdict(args: argparse.Namespace, figures: dict[str, Any]) -> dict[str, Any]:
    overall = figures["overall"]
    clean = overall["non_2xx"] == 0 and overall["errors"] == 0
    if args.no_embeddings:
        target = {"requests_per_second": TARGET_RPS_NO_EMBEDDINGS}
        met = overall["requests_per_second"] >= TARGET_RPS_NO_EMBEDDINGS
    else:
        target = {"requests_per_second": TARGET_RPS, "p95_ms": TARGET_P95_MS, "non_2xx": 0}
        met = (
            overall["requests_per_second"] >= TARGET_RPS
            and overall["p95_ms"] <= TARGET_P95_MS
            and clean
        )
    verdict: dict[str, Any] = {"targets": target, "met": met, "clean": clean}
    if args.adversarial:
        verdict["others_p95_target_ms"] = TARGET_OTHERS_P95_MS
        # Fast because refused is not fast: every request of theirs must also succeed.
        verdict["others_p95_met"] = overall["p95_ms"] <= TARGET_OTHERS_P95_MS and clean
    return verdict


def _baseline_line(base: dict[str, Any], others_p95: float) -> list[str]:
    if not base["requests"]:
        return ["  the same clients with no hostile tenant: no request answered"]
    floor = base["p95_ms"] > TARGET_OTHERS_P95_MS
    return [
        f"  the same clients with no hostile tenant ({base['seconds']:g} s just before, same "
        f"server): {base['requests_per_second']:.1f} requests/s, p95 {base['p95_ms']:.1f} ms, "
        f"{base['non_2xx']} non-2xx, {base['errors']} errors; the hostile tenant multiplied "
        f"their p95 by {others_p95 / base['p95_ms']:.2f}"
        + (
            f" (their p95 with nobody hostile is already above the {TARGET_OTHERS_P95_MS:.0f} "
            "ms target on this machine)"
            if floor
            else ""
        )
    ]


# -- report --------------------------------------------------------------------------------
def _ok(flag: bool) -> str:
    return "met" if flag else "MISSED"


def _settled(seed: dict[str, Any]) -> str:
    """How the seed's background work ended before the window (older results lack it)."""
    if "settle_seconds" not in seed:
        return ""
    state = "settled" if seed["all_settled"] else "NOT settled (gave up)"
    return (
        f", its extraction and vectors {state} in {seed['settle_seconds']:.1f} s before the window"
    )


def _row(label: str, b: dict[str, Any]) -> str:
    return (
        f"  {label:<20} {b['requests']:>7} {b['requests_per_second']:>8.1f} "
        f"{b['p50_ms']:>8.1f} {b['p95_ms']:>8.1f} {b['p99_ms']:>8.1f} "
        f"{b['non_2xx']:>6} {b['errors']:>6}"
    )


def render(results: dict[str, Any]) -> str:
    s, f, v = results["settings"], results["load"], results["verdict"]
    o = f["overall"]
    mode = "adversarial (tenant 0 hostile)" if s["adversarial"] else "normal mix"
    lines = [
        f"nams-local benchmark: {NAME} — {mode}",
        f"  nams-local serve on 127.0.0.1 ({_processes(s)}), embeddings "
        f"{'off' if s['no_embeddings'] else 'on'}, "
        f"extraction {s['extraction'] or 'serve default'}; {s['clients']} clients over "
        f"{s['measured_tenants']} tenant(s), {s['seconds']:g} s window; seeded "
        f"{s['tenants']} tenants x {results['seed']['conversations_per_tenant']} conversations x "
        f"{s['seed_messages']} messages{_settled(results['seed'])}",
        "",
        f"  {'operation':<20} {'reqs':>7} {'req/s':>8} {'p50 ms':>8} {'p95 ms':>8} "
        f"{'p99 ms':>8} {'non2xx':>6} {'errors':>6}",
    ]
    for op, b in f["operations"].items():
        lines.append(_row(op, b))
    lines.append(_row("overall", o))
    lines.append("")
    if s["no_embeddings"]:
        lines.append(
            f"  requests/s {o['requests_per_second']:.1f} (target >= "
            f"{TARGET_RPS_NO_EMBEDDINGS:,.0f} with --no-embeddings: {_ok(v['met'])}); "
            f"p95 {o['p95_ms']:.1f} ms; non-2xx {o['non_2xx']}, errors {o['errors']}"
        )
    else:
        lines.append(
            f"  requests/s {o['requests_per_second']:.1f} (target >= {TARGET_RPS:.0f}), "
            f"p95 {o['p95_ms']:.1f} ms (target <= {TARGET_P95_MS:.0f}), non-2xx "
            f"{o['non_2xx']} + errors {o['errors']} (target 0): {_ok(v['met'])}"
        )
    if s["adversarial"]:
        lines.append(
            f"  the other tenants' p95 {o['p95_ms']:.1f} ms with {o['non_2xx']} non-2xx and "
            f"{o['errors']} errors (target <= {TARGET_OTHERS_P95_MS:.0f} ms and 0 while tenant 0 "
            f"is hostile): {_ok(v['others_p95_met'])}"
        )
        if results.get("baseline"):
            lines += _baseline_line(results["baseline"], o["p95_ms"])
    if f.get("server_cpu_ms_per_request") is not None:
        workers = f.get("workers_cpu_ms_per_request")
        own = "supervisor" if s.get("workers", 1) > 1 else "server"
        lines.append(
            f"  server CPU per request: {f['server_cpu_ms_per_request']:.2f} ms in the {own} "
            "process"
            + (f" + {workers:.2f} ms in its worker processes" if workers else "")
            + f" = {f['server_cpu_ms_per_request'] + (workers or 0.0):.2f} ms"
            + " (all requests of the window; steadier than requests/s on a busy machine)"
        )
    for kind, count in sorted(f.get("error_kinds", {}).items()):
        lines.append(f"    error: {kind} x{count}")
    if "hostile" in f:
        h = f["hostile"]
        lines += [
            "",
            f"  hostile tenant ({s['hostile_clients']} clients; "
            f"{results['seed']['hostile_entities']} entities in its workspace) got:",
        ]
        for op, b in h["operations"].items():
            statuses = ", ".join(f"{k} x{n}" for k, n in b["statuses"].items())
            timed = b["requests"] - b["errors"] + b["timeouts"]
            latency = (
                f"p50 {b['p50_ms']:.0f} ms, max {b['max_ms']:.0f} ms"
                if timed
                else "no answer to time"
            )
            lines.append(f"    {op:<14} {b['requests']:>5} requests, {latency}; status {statuses}")
        for kind, count in sorted(h.get("error_kinds", {}).items()):
            lines.append(f"    error: {kind} x{count}")
    c, srv = f["client"], results["server"]
    lines += [
        "",
        f"  client cost: {c['processes']} generator process(es), {c['cpu_seconds']:.1f} CPU-s "
        f"in the window = {c['cores_used']:.2f} cores"
        + (f", {c['cpu_us_per_request']:.0f} us per request" if c["cpu_us_per_request"] else ""),
    ]
    if f["server_cores_used"] is not None:
        total = f["server_cpu_seconds"] + (f.get("workers_cpu_seconds") or 0.0)
        lines.append(
            f"  server cost (with its worker processes): {total:.1f} CPU-s = "
            f"{total / s['seconds']:.2f} cores; peak RSS {srv['peak_rss_mb']:.0f} MB"
        )
    if srv.get("killed_for"):
        lines.append(f"  SERVER KILLED: {srv['killed_for']}")
    ceil = results.get("ceiling")
    if ceil:
        per = ceil["client"]["cpu_us_per_request"]
        one = ceil["one_process_max_rps"]
        lines.append(
            f"  harness ceiling: one generator process with {s['clients']} connections pushed "
            f"GET /healthz at {ceil['requests_per_second']:.0f} requests/s (the server on the "
            "same cores); "
            + (
                f"it spent {per:.0f} us CPU per request, so with a core of its own it tops out "
                f"near {one:,.0f} requests/s (the run used {c['processes']})"
                if per and one
                else "its CPU cost was not measured"
            )
        )
    lines.append(
        f"  machine: {results['machine']['cpu_count']} cores, load avg before "
        + " ".join(f"{x:.2f}" for x in results["machine"].get("load_average") or [])
        + "; server and clients share it"
    )
    return "\n".join(lines)


def _processes(settings: dict[str, Any]) -> str:
    """How the server ran: one process, or ``serve --workers N`` (older results: one)."""
    n = settings.get("workers", 1)
    return f"--workers {n}: a supervisor and {n} worker processes" if n > 1 else "one process"


def _panels(results: dict[str, Any]) -> list[BarGroup]:
    ops = results["load"]["operations"]
    names = list(ops)
    panels = [
        BarGroup(
            "latency by operation (ms)",
            "ms",
            [*names, "overall"],
            {
                pct: [ops[n][f"{pct}_ms"] for n in names]
                + [results["load"]["overall"][f"{pct}_ms"]]
                for pct in ("p50", "p95", "p99")
            },
            target=TARGET_OTHERS_P95_MS if results["settings"]["adversarial"] else TARGET_P95_MS,
        )
    ]
    target = TARGET_RPS_NO_EMBEDDINGS if results["settings"]["no_embeddings"] else TARGET_RPS
    series = {"mix": [results["load"]["overall"]["requests_per_second"]]}
    if results.get("ceiling"):
        series["/healthz (harness ceiling)"] = [results["ceiling"]["requests_per_second"]]
    panels.append(BarGroup("throughput", "requests / s", ["requests/s"], series, target=target))
    return panels


def _delta(before: float | None, after: float | None) -> float | None:
    return after - before if before is not None and after is not None else None


def _run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    started = machine()
    server = ServeProcess.from_options(args, tmp, max_rss_bytes=args.server_max_rss_mb * 1_000_000)
    say(
        args,
        f"[{NAME}] starting nams-local serve ({'no ' if args.no_embeddings else ''}embeddings)",
    )
    with server:
        say(args, f"[{NAME}] serving on port {server.port} (pid {server.pid}); seeding")
        seeded = asyncio.run(seed(args, server.base_url))
        say(args, f"[{NAME}] seeded in {seeded['seconds']:.1f}s; settling its background work")
        seeded["settle"] = asyncio.run(settle(args, server.base_url, seeded))
        say(args, f"[{NAME}] settled in {seeded['settle']['seconds']:.1f}s")
        ceiling = None
        if args.ceiling_seconds > 0:
            say(args, f"[{NAME}] harness ceiling: GET /healthz for {args.ceiling_seconds:g}s")
            probe = [
                dict(c, role="healthz") for c in client_plan(args, seeded) if c["role"] == "normal"
            ]
            plan = base_plan(args, server.port, args.ceiling_seconds)
            # One process on purpose: what a single generator can push is the figure.
            ceiling = ceiling_figures(run_generators(plan, probe, processes=1, logs=tmp))
        clients = client_plan(args, seeded)
        baseline = None
        if args.adversarial and args.baseline_seconds > 0:
            calm = [c for c in clients if c["role"] == "normal"]
            say(args, f"[{NAME}] baseline: {len(calm)} clients, no hostile tenant, "
                f"for {args.baseline_seconds:g}s")  # fmt: skip
            cpu_before = server.cpu_seconds()
            plan = base_plan(args, server.port, args.baseline_seconds)
            calm_run = run_generators(plan, calm, processes=args.client_processes, logs=tmp)
            baseline = baseline_figures(calm_run, calm, _delta(cpu_before, server.cpu_seconds()))
        say(args, f"[{NAME}] {len(clients)} clients for {args.seconds:g}s")
        cpu_before, workers_before = server.cpu_seconds(), server.children_cpu_seconds()
        plan = base_plan(args, server.port, args.seconds)
        run = run_generators(plan, clients, processes=args.client_processes, logs=tmp)
        cpu_after, workers_after = server.cpu_seconds(), server.children_cpu_seconds()
        server_cpu = _delta(cpu_before, cpu_after)
        workers_cpu = _delta(workers_before, workers_after)
        rss = server.rss_bytes()
        peak = max(server.peak_rss_bytes, rss or 0)
        killed = server.killed_for
        found = None if killed else asyncio.run(count_messages(server.base_url, seeded))
        pid = server.pid
        exit_status = server.stop()
        log_tail = server.log_tail(2000) if killed or exit_status else ""
    figures = load_figures(run, clients, server_cpu, workers_cpu)
    results: dict[str, Any] = {
        "machine": started,
        "settings": {
            "seconds": args.seconds,
            "clients": args.clients,
            "tenants": args.tenants,
            "measured_tenants": args.tenants - 1 if args.adversarial else args.tenants,
            "users_per_tenant": args.users_per_tenant,
            "conversations_per_user": args.conversations_per_user,
            "seed_messages": args.seed_messages,
            "no_embeddings": args.no_embeddings,
            "workers": args.workers,
            "extraction": args.extraction,
            "adversarial": args.adversarial,
            "hostile_clients": args.hostile_clients if args.adversarial else 0,
            "baseline_seconds": args.baseline_seconds if args.adversarial else 0,
            "client_processes": args.client_processes,
            "timeout": args.timeout,
            "mix": dict(NORMAL_MIX),
            "smoke": args.smoke,
        },
        "seed": {
            "tenants": len(seeded["tokens"]),
            "conversations_per_tenant": len(next(iter(seeded["conversations"].values()))),
            "messages_per_tenant": seeded["messages_per_tenant"],
            "seconds": seeded["seconds"],
            "hostile_entities": seeded["hostile_entities"],
            "hostile_entities_seconds": seeded["hostile_entities_seconds"],
            "settle_seconds": seeded["settle"]["seconds"],
            "all_settled": seeded["settle"]["all_settled"],
        },
        "ceiling": ceiling,
        "baseline": baseline,
        "load": figures,
        "messages_found": found,
        "server": {
            "pid": pid,
            "exit_status": exit_status,
            "peak_rss_mb": peak / 1e6,
            "killed_for": killed,
            "log_tail": log_tail,
        },
    }
    results["verdict"] = _verdict(args, figures)
    return results


def report_name(args: argparse.Namespace) -> str:
    """Each variant has its own results file and README section: ``load``,
    ``load_no_embeddings``, ``load_adversarial``, ``load_adversarial_no_embeddings``, and
    each with ``_workersN`` for ``--workers N`` (N > 1) beside the one-process figures."""
    return "_".join(
        [NAME, *(["adversarial"] if args.adversarial else []),
         *(["no_embeddings"] if args.no_embeddings else []),
         *([f"workers{args.workers}"] if args.workers > 1 else [])]
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="nams-bench-load-") as tmp:
        results = _run(args, Path(tmp))
    name = report_name(args)
    publish(
        args, name, results, render(results), argv=argv, panels=_panels(results), benchmark=NAME
    )
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
