"""Read-only Cypher latency on the local engine, and where the time goes.

A seeded memory graph — ``--entities`` entities (people, organisations, places, concepts)
with ``--edges-per-entity`` typed relationships each, and ``--conversations`` conversations of
``--messages-per-conversation`` messages with a reasoning step and a tool call each — is
written through the backend API into an in-memory database. Each query shape is run
``--repeats`` times, interleaved, through ``SQLiteBackend.query`` in two conditions:

* **cached**: nothing was written since the last query, so the worker answers from the
  graph it keeps (``cypher_worker``): no read, no pickling, no build;
* **after a write**: a relationship is written before each query, so the projection is read,
  sent and built again (the cost every query paid before the cache).

Beside them, the parts alone: reading the projection from SQLite (``cypher.load_projection``),
building the graph (``cypher_run.build_graph``) and interpreting one query on a built graph
(``cypher.run_statement``).

Run ``python -m benchmarks cypher_latency --help`` for the options.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
from typing import Any

from backends.sqlite import SQLiteBackend
from backends.sqlite.cypher import load_projection, run_statement
from backends.sqlite.cypher_run import build_graph
from backends.sqlite.cypher_text import prepare
from backends.sqlite.store import Ctx

from ._common import add_output_options, add_workload_options, percentile, positive, say
from ._report import machine

__all__ = ["QUERIES", "main"]

TYPES = ("person", "organization", "location", "concept")
RELATIONS = ("KNOWS", "WORKS_AT", "LIVES_IN", "RELATED_TO")

#: One query per supported shape: (name, cypher, params).
QUERIES: list[tuple[str, str, dict[str, Any]]] = [
    (
        "label-where-order",
        "MATCH (p:Person) WHERE p.name STARTS WITH 'person 1' RETURN p.name AS name "
        "ORDER BY name LIMIT 20",
        {},
    ),
    (
        "relationship-aliases",
        "MATCH (p:Person)-[w:WORKS_AT]->(o:Organization) RETURN p.name AS who, "
        "o.name AS employer LIMIT 50",
        {},
    ),
    (
        "parameters",
        "MATCH (p:Entity {name: $name})-[r]->(x) RETURN type(r) AS rel, x.name AS other",
        {"name": "person 7"},
    ),
    ("count", "MATCH (e:Entity) RETURN e.type AS type, count(*) AS n ORDER BY type", {}),
    (
        "up-to-two-hops",
        "MATCH (a:Person {name: $name})-[*1..2]->(c) RETURN DISTINCT c.name LIMIT 20",
        {"name": "person 3"},
    ),
    (
        "messages-of-a-user",
        "MATCH (c:Conversation {user_id: $user})-[:HAS_MESSAGE]->(m:Message) "
        "RETURN m.role AS role, m.content AS content ORDER BY m.timestamp LIMIT 20",
        {"user": "user 1"},
    ),
    (
        "steps-and-tools",
        "MATCH (c:Conversation)-[:HAS_STEP]->(s:ReasoningStep) "
        "OPTIONAL MATCH (s)-[:USES_TOOL]->(t:ToolCall) "
        "RETURN c.user_id AS user, count(s) AS steps, collect(t.tool_name) AS tools LIMIT 10",
        {},
    ),
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks cypher_latency", description=__doc__.split("\n")[0]
    )
    add_workload_options(parser, entities=1000, seed=42)
    parser.add_argument("--edges-per-entity", type=positive, default=2)
    parser.add_argument("--conversations", type=positive, default=20)
    parser.add_argument("--messages-per-conversation", type=positive, default=15)
    parser.add_argument("--repeats", type=positive, default=20)
    add_output_options(parser)
    return parser


async def _populate(backend: SQLiteBackend, args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    ids: list[str] = []
    for n in range(args.entities):
        type_ = TYPES[n % len(TYPES)]
        entity = await backend.add_entity(f"{type_} {n // len(TYPES)}", type_, f"entity {n}")
        ids.append(entity.id)
    for source in ids:
        for _ in range(args.edges_per_entity):
            target = rng.choice(ids)
            if target != source:
                await backend.add_relationship(source, target, rng.choice(RELATIONS))
    for n in range(args.conversations):
        conversation = await backend.create_conversation(f"user {n}")
        for i in range(args.messages_per_conversation):
            role = "user" if i % 2 == 0 else "assistant"
            await backend.add_message(conversation.id, role, f"message {i} of conversation {n}")
        step = await backend.record_step(conversation.id, "look it up", "search", "found")
        await backend.record_tool_call("search", '{"q": "x"}', "ok", "success", step.id, 5)


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0


def _summary(samples: list[float]) -> dict[str, float]:
    return {"p50_ms": percentile(samples, 50), "p95_ms": percentile(samples, 95)}


async def _run(args: argparse.Namespace) -> dict[str, Any]:
    backend = SQLiteBackend(":memory:", embeddings=False, extraction="off")
    try:
        started = time.perf_counter()
        await _populate(backend, args)
        say(args, f"populated the memory graph in {_ms(started) / 1000:.1f} s")
        ctx = Ctx(backend.store, backend.workspace)
        statements = {name: prepare(cypher, params) for name, cypher, params in QUERIES}
        cached: dict[str, list[float]] = {name: [] for name, _, _ in QUERIES}
        written: dict[str, list[float]] = {name: [] for name, _, _ in QUERIES}
        interpret: dict[str, list[float]] = {name: [] for name, _, _ in QUERIES}
        reads: list[float] = []
        builds: list[float] = []
        rows: dict[str, int] = {}
        ids = [e.id for e in (await backend.list_entities())[:2]]
        for _ in range(args.repeats):
            for name, cypher, params in QUERIES:
                await backend.add_relationship(ids[0], ids[1], "TOUCHED")
                start = time.perf_counter()
                await backend.query(cypher, params)
                written[name].append(_ms(start))
                start = time.perf_counter()
                result = await backend.query(cypher, params)
                cached[name].append(_ms(start))
                rows[name] = len(result.rows)
            start = time.perf_counter()
            _, projection = backend.store.run_sync(load_projection, ctx)
            reads.append(_ms(start))
            start = time.perf_counter()
            graph = build_graph(projection)
            builds.append(_ms(start))
            for name, statement in statements.items():
                start = time.perf_counter()
                run_statement(graph, statement)
                interpret[name].append(_ms(start))
        return {
            "workload": {
                "entities": args.entities,
                "relationships": len(projection.relationships),
                "messages": len(projection.messages),
                "steps": len(projection.steps),
                "tool_calls": len(projection.tool_calls),
                "repeats": args.repeats,
            },
            "load_graph": _summary(reads),
            "build_graph": _summary(builds),
            "queries": {
                name: {
                    "rows": rows[name],
                    **_summary(cached[name]),
                    "after_write": _summary(written[name]),
                    "interpret": _summary(ms),
                }
                for name, ms in interpret.items()
            },
            "machine": machine(),
        }
    finally:
        await backend.aclose()


def _table(results: dict[str, Any]) -> str:
    w = results["workload"]
    lines = [
        f"Cypher on the local engine: {w['entities']} entities, {w['relationships']} "
        f"relationships, {w['messages']} messages, {w['steps']} steps, {w['tool_calls']} "
        f"tool calls; {w['repeats']} runs per query",
        f"  read projection from SQLite   p50 {results['load_graph']['p50_ms']:7.1f} ms   "
        f"p95 {results['load_graph']['p95_ms']:7.1f} ms",
        f"  build the graph (in a worker) p50 {results['build_graph']['p50_ms']:7.1f} ms   "
        f"p95 {results['build_graph']['p95_ms']:7.1f} ms",
        f"  {'query':20} {'rows':>5} {'cached p50':>11} {'p95':>8} {'after write p50':>16} "
        f"{'p95':>8} {'interpret p50':>14}",
    ]
    for name, q in results["queries"].items():
        lines.append(
            f"  {name:20} {q['rows']:5d} {q['p50_ms']:9.1f}ms {q['p95_ms']:6.1f}ms "
            f"{q['after_write']['p50_ms']:14.1f}ms {q['after_write']['p95_ms']:6.1f}ms "
            f"{q['interpret']['p50_ms']:12.1f}ms"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    results = asyncio.run(_run(args))
    print(_table(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0
