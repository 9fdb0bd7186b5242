"""Ingest and search benchmark for the local SQLite engine.

One run measures, on a fresh ``SQLiteBackend``:

1. **ingest**: a deterministic synthetic chat workload (``benchmarks._workload``) written
   with ``add_messages`` in bulks of at most 100, plus entities written one ``add_entity``
   call each. For context the raw embedder throughput is measured in the same run on the
   same texts in the same batch sizes (each batch timed beside its bulk add, so both see
   the same machine noise), and the ingest / raw ratio shows what storage and indexing add
   on top of embedding.
2. **search latency**: ``search_messages`` inside one random conversation and
   ``search_entities`` over the workspace, in the default mode and, with embeddings on,
   in ``text`` and ``vector`` mode separately; plus bare ``embed_query`` for reference.
   Every query string is used exactly once, so the embedder's query cache never makes a
   search look cheaper than a fresh query would be.

Run ``python -m benchmarks ingest_search --help`` for the options.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from backends.sqlite import SQLiteBackend
from nams_local.backend import DEFAULT_SEARCH_LIMIT, MAX_BULK_MESSAGES
from nams_local.embeddings import BaseEmbedder
from nams_local.models import NewMessage, SearchMode

from ._common import (
    Progress,
    add_embedder_options,
    add_output_options,
    add_workload_options,
    chosen_embedder,
    file_size,
    indexed,
    mb,
    non_negative,
    percentile,
    positive,
    say,
    time_embed,
)
from ._report import machine_details
from ._workload import Workload, chunks, count_tokens, distinct_queries, generate

__all__ = ["main"]

NAME = "ingest_search"
Target = Literal["messages", "entities", "embed_query"]
_WORD = re.compile(r"\w+", re.UNICODE)
_SHORT_WORDS = 3  # words of at most this many letters don't count as "shared" with a hit


# -- results -------------------------------------------------------------------------------
@dataclass
class Rate:
    count: int
    seconds: float

    @property
    def per_second(self) -> float:
        return self.count / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict[str, float]:
        return {"count": self.count, "seconds": self.seconds, "per_second": self.per_second}


@dataclass(frozen=True)
class SearchKind:
    key: str
    target: Target
    mode: SearchMode | None


@dataclass
class Latency:
    kind: SearchKind
    samples_ms: list[float] = field(default_factory=list)
    hits: list[int] = field(default_factory=list)
    top_shares_word: list[bool] = field(default_factory=list)
    search_type: str = ""

    def summary(self) -> dict[str, Any]:
        ms = self.samples_ms
        n = len(ms)
        out: dict[str, Any] = {
            "target": self.kind.target,
            "mode_requested": self.kind.mode or "default",
            "search_type": self.search_type,
            "n": n,
            "p50_ms": percentile(ms, 50),
            "p95_ms": percentile(ms, 95),
            "mean_ms": sum(ms) / n if n else 0.0,
            "max_ms": max(ms, default=0.0),
        }
        if self.kind.target != "embed_query":
            out["mean_hits"] = sum(self.hits) / n if n else 0.0
            out["empty_results"] = sum(1 for h in self.hits if h == 0)
            share = sum(self.top_shares_word) / n if n else 0.0
            out["top_hit_shares_query_word"] = share
        return out


# -- options -------------------------------------------------------------------------------
def _batch(value: str) -> int:
    number = positive(value)
    if number > MAX_BULK_MESSAGES:
        raise argparse.ArgumentTypeError(f"at most {MAX_BULK_MESSAGES} messages per bulk add")
    return number


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"python -m benchmarks {NAME}",
        description="Ingest throughput and search latency of the local SQLite engine.",
    )
    size = parser.add_argument_group("workload")
    add_workload_options(size, users=100, conversations_per_user=5, entities=1000, seed=42)
    size.add_argument(
        "--messages", type=positive, default=10_000, help="total, default: %(default)s"
    )
    size.add_argument(
        "--queries", type=positive, default=200, help="per search kind, default: %(default)s"
    )
    size.add_argument(
        "--warmup", type=non_negative, default=5, help="per search kind, default: %(default)s"
    )
    size.add_argument(
        "--batch-size",
        type=_batch,
        default=MAX_BULK_MESSAGES,
        help="max messages per add_messages call, default: %(default)s",
    )
    size.add_argument("--limit", type=positive, default=DEFAULT_SEARCH_LIMIT, help="search limit")

    engine = parser.add_argument_group("engine")
    where = engine.add_mutually_exclusive_group()
    where.add_argument("--db", type=Path, help="database file (must not exist yet)")
    where.add_argument("--memory", action="store_true", help='use ":memory:"')
    engine.add_argument(
        "--no-embeddings", action="store_true", help="text search only, nothing is embedded"
    )
    add_embedder_options(engine, vector_index=True)
    engine.add_argument(
        "--no-raw-embed",
        action="store_true",
        help="skip timing the bare embedder beside each bulk add (halves a MiniLM run)",
    )

    add_output_options(parser)
    return parser


# -- phases --------------------------------------------------------------------------------
def _batches(workload: Workload, size: int) -> list[tuple[int, list[str], list[str]]]:
    """``(conversation index, roles, contents)`` for every bulk add, in ingest order."""
    out: list[tuple[int, list[str], list[str]]] = []
    for index, conv in enumerate(workload.conversations):
        for chunk in chunks(conv.turns, size):
            out.append((index, [t.role for t in chunk], [t.content for t in chunk]))
    return out


async def _ingest_messages(
    backend: SQLiteBackend,
    raw_embedder: BaseEmbedder | None,
    batches: list[tuple[int, list[str], list[str]]],
    conv_ids: list[str],
    quiet: bool,
) -> tuple[Rate, Rate | None, int]:
    """Bulk-add every batch: ``(ingest rate, raw embed rate, stored tokens)``.

    With ``raw_embedder``, ``embedder.embed`` is also timed on each batch's texts, right
    before or right after its ``add_messages`` (alternating), so both figures see the same
    machine noise; on a shared box, two separate phases minutes apart do not.
    """
    total = sum(len(contents) for _, _, contents in batches)
    progress = Progress("add_messages", total, enabled=not quiet)
    ingest_seconds = raw_seconds = 0.0
    done = tokens = 0
    for n, (conv_index, roles, contents) in enumerate(batches):
        new = [NewMessage(role=r, content=c) for r, c in zip(roles, contents, strict=True)]
        raw_first = n % 2 == 0
        if raw_embedder is not None and raw_first:
            raw_seconds += time_embed(raw_embedder, contents)
        start = time.perf_counter()
        stored = await backend.add_messages(conv_ids[conv_index], new)
        ingest_seconds += time.perf_counter() - start
        if raw_embedder is not None and not raw_first:
            raw_seconds += time_embed(raw_embedder, contents)
        tokens += sum(m.token_count or 0 for m in stored)
        done += len(stored)
        progress.update(done, ingest_seconds)
    start = time.perf_counter()
    await indexed(backend)  # the vectors of the last bulks are still being embedded
    ingest_seconds += time.perf_counter() - start
    raw = Rate(done, raw_seconds) if raw_embedder is not None else None
    return Rate(done, ingest_seconds), raw, tokens


def _shares_word(query: str, content: str) -> bool:
    words = {w for w in _WORD.findall(query.casefold()) if len(w) > _SHORT_WORDS}
    return bool(words & set(_WORD.findall(content.casefold())))


async def _search_once(
    backend: SQLiteBackend,
    embedder: BaseEmbedder | None,
    kind: SearchKind,
    query: str,
    conversation_id: str,
    limit: int,
) -> tuple[float, int, bool, str]:
    """One timed call: ``(milliseconds, hits, top hit shares a word, search_type)``."""
    if kind.target == "embed_query":
        assert embedder is not None
        start = time.perf_counter()
        embedder.embed_query(query)
        return (time.perf_counter() - start) * 1000.0, 0, False, "embed_query"
    if kind.target == "messages":
        start = time.perf_counter()
        messages = await backend.search_messages(conversation_id, query, limit, kind.mode)
        elapsed = (time.perf_counter() - start) * 1000.0
        top = messages.items[0].content if messages.items else ""
        return elapsed, len(messages.items), _shares_word(query, top), messages.search_type
    start = time.perf_counter()
    found = await backend.search_entities(query, None, limit, kind.mode)
    elapsed = (time.perf_counter() - start) * 1000.0
    top = ""
    if found.items:
        best = found.items[0]
        top = f"{best.name} {best.description or ''}"
    return elapsed, len(found.items), _shares_word(query, top), found.search_type


def _search_kinds(embeddings: bool) -> list[SearchKind]:
    kinds = [
        SearchKind("messages.default", "messages", None),
        SearchKind("entities.default", "entities", None),
    ]
    if embeddings:
        kinds += [
            SearchKind("messages.text", "messages", "text"),
            SearchKind("messages.vector", "messages", "vector"),
            SearchKind("entities.text", "entities", "text"),
            SearchKind("entities.vector", "entities", "vector"),
            SearchKind("embed_query", "embed_query", None),
        ]
    return kinds


async def _run(args: argparse.Namespace, db_path: Path | None) -> dict[str, Any]:
    embeddings = not args.no_embeddings
    embedder: BaseEmbedder | None = None
    if embeddings:
        embedder = chosen_embedder(args)

    say(args, f"[{NAME}] generating workload (seed {args.seed})")
    workload = generate(
        users=args.users,
        conversations_per_user=args.conversations_per_user,
        messages=args.messages,
        entities=args.entities,
        seed=args.seed,
    )
    batches = _batches(workload, args.batch_size)
    query_rng = random.Random(args.seed + 1)
    kinds = _search_kinds(embeddings)
    seen: set[str] = set()
    warm = {k.key: distinct_queries(query_rng, args.warmup, seen) for k in kinds}
    measured = {k.key: distinct_queries(query_rng, args.queries, seen) for k in kinds}

    results: dict[str, Any] = {"ingest": {}}
    ingest = results["ingest"]
    if embedder is not None:
        say(args, f"[{NAME}] loading embedder {embedder.name}")
        start = time.perf_counter()
        embedder.embed(["warm-up: load the model before anything is timed"])
        ingest["embedder_load_seconds"] = time.perf_counter() - start

    path: str | Path = ":memory:" if db_path is None else db_path
    backend = SQLiteBackend(
        path, embedder=embedder, embeddings=embeddings, vector_index=args.vector_index
    )
    try:
        say(args, f"[{NAME}] ingesting into {path}")
        start = time.perf_counter()
        conv_ids: list[str] = []
        for spec in workload.conversations:
            conv = await backend.create_conversation(spec.user_id, {"topic": spec.topic})
            conv_ids.append(conv.id)
        ingest["conversations"] = Rate(len(conv_ids), time.perf_counter() - start).to_json()

        raw_embedder = None if args.no_raw_embed else embedder
        messages_rate, raw_rate, stored_tokens = await _ingest_messages(
            backend, raw_embedder, batches, conv_ids, args.quiet
        )
        ingest["messages"] = messages_rate.to_json()
        ingest["bulk_calls"] = len(batches)
        if raw_rate is not None and raw_rate.per_second > 0:
            ingest["raw_embed"] = raw_rate.to_json()
            ingest["ingest_over_raw_embed"] = messages_rate.per_second / raw_rate.per_second
            extra = messages_rate.seconds - raw_rate.seconds
            ingest["non_embedding_ms_per_message"] = extra * 1000.0 / max(raw_rate.count, 1)

        progress = Progress("add_entity", len(workload.entities), enabled=not args.quiet)
        start = time.perf_counter()
        for i, entity in enumerate(workload.entities, 1):
            await backend.add_entity(entity.name, entity.type, entity.description)
            progress.update(i)
        ingest["entities"] = Rate(len(workload.entities), time.perf_counter() - start).to_json()

        info = await asyncio.to_thread(backend.info)

        say(args, f"[{NAME}] searching: {args.warmup} warm-up + {args.queries} queries per kind")
        latencies = {k.key: Latency(k) for k in kinds}
        search_rng = random.Random(args.seed + 2)
        for i in range(args.warmup):
            conv_id = search_rng.choice(conv_ids)
            for k in kinds:
                await _search_once(backend, embedder, k, warm[k.key][i], conv_id, args.limit)
        cache_before = embedder.query_cache_info() if embedder is not None else None
        for i in range(args.queries):
            # Kinds interleaved per query, so machine noise spreads evenly over them.
            conv_id = search_rng.choice(conv_ids)
            for k in kinds:
                ms, hits, shares, search_type = await _search_once(
                    backend, embedder, k, measured[k.key][i], conv_id, args.limit
                )
                lat = latencies[k.key]
                lat.samples_ms.append(ms)
                lat.hits.append(hits)
                lat.top_shares_word.append(shares)
                lat.search_type = search_type
        cache_after = embedder.query_cache_info() if embedder is not None else None
    finally:
        await backend.aclose()

    tokens = [count_tokens(t.content) for t in workload.messages()]
    results["search"] = {key: lat.summary() for key, lat in latencies.items()}
    results["search_notes"] = {
        "distinct_query_strings": len(seen),
        "query_cache_hits_during_measurement": (
            cache_after.hits - cache_before.hits
            if cache_after is not None and cache_before is not None
            else None
        ),
        "messages_per_conversation": workload.message_count / max(len(conv_ids), 1),
    }
    results["workload"] = {
        "seed": args.seed,
        "users": workload.users,
        "conversations": len(workload.conversations),
        "messages": workload.message_count,
        "entities": len(workload.entities),
        "message_tokens_mean": stored_tokens / max(workload.message_count, 1),
        "message_tokens_min": min(tokens, default=0),
        "message_tokens_max": max(tokens, default=0),
        "batch_size": args.batch_size,
        "queries_per_kind": args.queries,
        "warmup_per_kind": args.warmup,
        "search_limit": args.limit,
    }
    results["engine"] = {
        "database": "memory" if db_path is None else str(db_path),
        "db_bytes_after_close": file_size(db_path) if db_path is not None else None,
        "embeddings": embeddings,
        "info": info,
    }
    return results


# -- report --------------------------------------------------------------------------------
def render(results: dict[str, Any]) -> str:
    machine, work, engine = results["machine"], results["workload"], results["engine"]
    info, ingest = engine["info"], results["ingest"]
    load = machine["load_average_at_start"]
    load_text = f", load avg at start {' '.join(f'{x:.2f}' for x in load)}" if load else ""
    if engine["db_bytes_after_close"] is not None:
        db_text = f"file, {mb(engine['db_bytes_after_close'])} on disk after close"
    else:
        db_text = ":memory:"
    embedder = info["embedder"]
    if engine["embeddings"]:
        embedder += f" ({info['dimension']} dims)"
    lines = [
        f"nams-local benchmark: {NAME}  ({results['finished_at']})",
        f"  machine    {machine['cpu_count']} cores (os.cpu_count), {machine['platform']}"
        f"{load_text}",
        f"  python     {machine['python']}, code at git {machine['git_revision'] or 'unknown'}",
        f"  sqlite     {info['sqlite_version']} via {info['driver']}, fts5={info['fts5']}, "
        f"sqlite-vec {info['sqlite_vec']}",
        f"  vectors    index {info['vector_index']}, embedder {embedder}",
        f"  database   {db_text}",
        f"  workload   seed {work['seed']}: {work['users']} users, {work['conversations']} "
        f"conversations, {work['messages']} messages (mean {work['message_tokens_mean']:.1f} "
        f"tokens, {work['message_tokens_min']}-{work['message_tokens_max']}), "
        f"{work['entities']} entities",
        "",
        "Ingest (wall clock)                          count   seconds       rate",
    ]

    def row(label: str, rate: dict[str, float], unit: str) -> str:
        return (
            f"  {label:<40} {rate['count']:>7} {rate['seconds']:>9.2f} "
            f"{rate['per_second']:>10.1f} {unit}"
        )

    if "embedder_load_seconds" in ingest:
        lines.append(
            f"  {'embedder load (first embed, not counted)':<40} {'':>7} "
            f"{ingest['embedder_load_seconds']:>9.2f}"
        )
    lines.append(row("create_conversation", ingest["conversations"], "conv/s"))
    bulk = f"add_messages ({ingest['bulk_calls']} calls, <= {work['batch_size']} each)"
    lines.append(row(bulk, ingest["messages"], "msg/s"))
    if "raw_embed" in ingest:
        lines.append(row("raw embedder.embed, same batches", ingest["raw_embed"], "msg/s"))
    if "ingest_over_raw_embed" in ingest:
        lines.append(
            f"  {'ingest rate / raw embed rate':<40} {'':>7} {'':>9} "
            f"{ingest['ingest_over_raw_embed']:>10.2f}   "
            f"(+{ingest['non_embedding_ms_per_message']:.2f} ms/msg beyond embedding)"
        )
    lines.append(row("add_entity (one per call)", ingest["entities"], "ent/s"))

    notes = results["search_notes"]
    lines += [
        "",
        f"Search latency, ms ({work['queries_per_kind']} queries per kind after "
        f"{work['warmup_per_kind']} warm-up, limit {work['search_limit']}, kinds interleaved)",
        f"  {'kind':<18} {'ran as':<12} {'n':>5} {'p50':>7} {'p95':>7} {'mean':>7} "
        f"{'max':>7} {'hits/q':>7} {'top~q':>6}",
    ]
    for key, s in results["search"].items():
        hits = f"{s['mean_hits']:>7.1f}" if "mean_hits" in s else f"{'':>7}"
        share = f"{s['top_hit_shares_query_word']:>6.0%}" if "mean_hits" in s else f"{'':>6}"
        lines.append(
            f"  {key:<18} {s['search_type']:<12} {s['n']:>5} {s['p50_ms']:>7.2f} "
            f"{s['p95_ms']:>7.2f} {s['mean_ms']:>7.2f} {s['max_ms']:>7.2f} {hits} {share}"
        )
    hits = notes["query_cache_hits_during_measurement"]
    lines.append("")
    if hits is not None:
        lines += [
            f"  Every query string is used once ({notes['distinct_query_strings']} distinct), so "
            "the embedder's query cache cannot make",
            f"  repeated queries look cheap (query cache hits while measuring: {hits}).",
        ]
    lines += [
        f"  messages.* search one random conversation (~"
        f"{notes['messages_per_conversation']:.0f} messages); entities.* the whole workspace.",
        "  Times include the asyncio -> worker-thread hop"
        + ("; embed_query is the bare embedder call." if hits is not None else "."),
        "  top~q: share of searches whose best hit shares a word (4+ letters) with the query.",
    ]
    return "\n".join(lines)


# -- entry point ---------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.db is not None and args.db.exists():
        parser.error(f"--db {args.db} already exists; the benchmark needs a fresh database")
    machine = machine_details()
    with tempfile.TemporaryDirectory(prefix="nams-bench-") as tmp:
        if args.memory:
            db_path: Path | None = None
        elif args.db is not None:
            db_path = args.db
        else:
            db_path = Path(tmp) / "bench.sqlite3"
        results = asyncio.run(_run(args, db_path))
    results["machine"] = machine
    results["benchmark"] = NAME
    results["argv"] = list(sys.argv[1:] if argv is None else argv)
    results["finished_at"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    print(render(results))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2, default=str) + "\n")
        say(args, f"[{NAME}] results written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
