"""How the local engine scales: 10k → 100k (→ 1M) messages over 1,000 users.

One file database grows in stages (``--sizes``; ``--with-1m`` adds 1,000,000). Every stage
adds new conversations of ``--messages-per-conversation`` turns, spread evenly over the
same users, plus entities, so a user's conversation keeps its size while the total and the
user's history grow. After each stage it measures:

- **ingest**: ``add_messages`` throughput of the stage (store + embed + index), next to the
  raw throughput of the same embedder on the same batches (a sample of them, timed beside
  their bulk add so both see the same machine noise): the ratio says what storage and
  indexing cost beyond embedding (target ≥ 0.8);
- **size**: database bytes on disk (with WAL) and the process's RSS;
- **search latency** with fresh queries: ``search_messages`` in one random conversation
  (scoped to one conversation: the partitioning claim is that this stays flat as the
  total grows), ``search_user_messages`` for one random user (their 5 newest other
  conversations) and ``search_entities`` over the workspace (grows with the total).

Run ``python -m benchmarks scale --help`` for the options.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import resource
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from backends.sqlite import SQLiteBackend
from nams_local.embeddings import BaseEmbedder
from nams_local.models import NewMessage

from ._common import (
    EXTRACTION_MODES,
    Progress,
    add_embedder_options,
    add_workload_options,
    chosen_embedder,
    file_size,
    mb,
    message_counts,
    non_negative,
    percentile,
    positive,
    say,
)
from ._report import BarGroup, add_report_options, machine, publish
from ._workload import distinct_queries, generate

__all__ = ["main"]

NAME = "scale"
TARGET_INGEST_RATIO = 0.8
TARGET_FLAT = 1.5
KINDS = {
    "conversation": "search_messages, one conversation",
    "user": "search_user_messages, one user",
    "entities": "search_entities, whole workspace",
}


def _sizes(value: str) -> list[int]:
    """Stage sizes, smallest first (the store only grows), repeats dropped."""
    return sorted(set(message_counts(value)))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"python -m benchmarks {NAME}",
        description="Ingest rate, size, RSS and scoped search latency as one store grows.",
    )
    w = parser.add_argument_group("workload")
    w.add_argument("--sizes", type=_sizes, default=[10_000, 100_000], help="default: 10000,100000")
    w.add_argument("--with-1m", action="store_true", help="add a 1,000,000-message stage")
    add_workload_options(w, users=1000, seed=42)
    w.add_argument(
        "--messages-per-conversation", type=positive, default=10, help="default: %(default)s"
    )
    w.add_argument(
        "--entities-per-message",
        type=float,
        default=0.02,
        help="entities added per message added, default: %(default)s",
    )
    m = parser.add_argument_group("measurement")
    m.add_argument("--queries", type=positive, default=200, help="per kind and stage")
    m.add_argument("--warmup", type=non_negative, default=10, help="per kind and stage")
    m.add_argument(
        "--raw-bulk",
        type=positive,
        default=2000,
        help="also embed this many of the stage's texts in one call (the embedder's best "
        "case, length-batched), default: %(default)s",
    )
    m.add_argument(
        "--raw-every",
        type=positive,
        default=5,
        help="time the bare embedder on every Nth bulk (0 cost elsewhere), default: 5",
    )
    e = parser.add_argument_group("engine")
    add_embedder_options(e)
    e.add_argument(
        "--extraction",
        choices=EXTRACTION_MODES,
        default="off",
        help="the engine's entity extraction on add_messages, default: off (this measures "
        "store + embed + index; extraction has its own cost, --extraction sync adds it)",
    )
    e.add_argument("--db", type=Path, help="database file (must not exist); default: temp")
    add_report_options(parser)
    return parser


def _rss_bytes() -> int:
    """Resident set size now (Linux ``/proc``); peak RSS where that is unavailable."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
        return pages * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


async def _grow(
    args: argparse.Namespace,
    backend: SQLiteBackend,
    embedder: BaseEmbedder,
    stage: int,
    added: int,
    convs: list[tuple[str, str]],
) -> dict[str, Any]:
    """Add ``added`` messages (new conversations) and their entities; the rates."""
    per_conv = args.messages_per_conversation
    n_convs = max(1, added // per_conv)
    per_user = max(1, n_convs // args.users)
    users = min(args.users, n_convs)
    work = generate(
        users=users,
        conversations_per_user=per_user,
        messages=added,
        entities=int(added * args.entities_per_message),
        seed=args.seed + 1000 * stage,
    )
    progress = Progress(f"stage {stage} add_messages", work.message_count, enabled=not args.quiet)
    ingest_s = sampled_ingest_s = raw_s = 0.0
    done = sampled = bulks = 0
    for spec in work.conversations:
        conv = await backend.create_conversation(spec.user_id, {"topic": spec.topic})
        convs.append((spec.user_id, conv.id))
        for i in range(0, len(spec.turns), 100):
            chunk = spec.turns[i : i + 100]
            new = [NewMessage(role=t.role, content=t.content) for t in chunk]
            raw_here = bulks % args.raw_every == 0
            bulks += 1
            if raw_here and bulks % 2:  # alternate which goes first
                start = time.perf_counter()
                embedder.embed([t.content for t in chunk])
                raw_s += time.perf_counter() - start
            start = time.perf_counter()
            await backend.add_messages(conv.id, new)
            elapsed = time.perf_counter() - start
            ingest_s += elapsed
            if raw_here:
                sampled_ingest_s += elapsed
                sampled += len(chunk)
                if not bulks % 2:
                    start = time.perf_counter()
                    embedder.embed([t.content for t in chunk])
                    raw_s += time.perf_counter() - start
            done += len(chunk)
            progress.update(done, ingest_s)
    start = time.perf_counter()
    for entity in work.entities:
        await backend.add_entity(entity.name, entity.type, entity.description)
    entity_s = time.perf_counter() - start
    # The embedder's best case on the same texts: one call, so it batches by length.
    texts = [t.content for spec in work.conversations for t in spec.turns][: args.raw_bulk]
    start = time.perf_counter()
    embedder.embed(texts)
    bulk_rate = len(texts) / (time.perf_counter() - start) if texts else 0.0
    raw_rate = sampled / raw_s if raw_s else 0.0
    sampled_rate = sampled / sampled_ingest_s if sampled_ingest_s else 0.0
    return {
        "messages_added": done,
        "conversations_added": len(work.conversations),
        "entities_added": len(work.entities),
        "ingest_seconds": ingest_s,
        "ingest_per_second": done / ingest_s if ingest_s else 0.0,
        "sampled_messages": sampled,
        "sampled_ingest_per_second": sampled_rate,
        "raw_embed_per_second": raw_rate,
        "ingest_over_raw": sampled_rate / raw_rate if raw_rate else None,
        "raw_one_call_per_second": bulk_rate,
        "raw_one_call_texts": len(texts),
        "ingest_over_raw_one_call": done / ingest_s / bulk_rate if ingest_s and bulk_rate else None,
        "entities_per_second": len(work.entities) / entity_s if entity_s else 0.0,
        "mean_messages_per_bulk": done / bulks if bulks else 0.0,
    }


async def _search(
    args: argparse.Namespace,
    backend: SQLiteBackend,
    convs: Sequence[tuple[str, str]],
    rng: random.Random,
    seen: set[str],
) -> dict[str, Any]:
    samples: dict[str, list[float]] = {k: [] for k in KINDS}
    hits: dict[str, int] = dict.fromkeys(KINDS, 0)
    total = args.warmup + args.queries
    for i in range(total):
        for kind in rng.sample(list(KINDS), len(KINDS)):  # kinds in random order
            (query,) = distinct_queries(rng, 1, seen)
            user, conv = rng.choice(convs)
            start = time.perf_counter()
            if kind == "conversation":
                n = len((await backend.search_messages(conv, query, 10)).items)
            elif kind == "user":
                groups = await backend.search_user_messages(user, query, include_steps=False)
                n = sum(len(g.messages) for g in groups)
            else:
                n = len((await backend.search_entities(query, None, 10)).items)
            elapsed = (time.perf_counter() - start) * 1000.0
            if i >= args.warmup:
                samples[kind].append(elapsed)
                hits[kind] += n
    return {
        kind: {
            "n": len(ms),
            "p50_ms": percentile(ms, 50),
            "p95_ms": percentile(ms, 95),
            "mean_hits": hits[kind] / len(ms) if ms else 0.0,
        }
        for kind, ms in samples.items()
    }


def _stage_sizes(args: argparse.Namespace) -> list[int]:
    return sorted({*args.sizes, *([1_000_000] if args.with_1m else [])})


async def _run(
    args: argparse.Namespace,
    db: Path,
    embedder: BaseEmbedder,
    on_stage: Callable[[list[dict[str, Any]]], None],
) -> list[dict[str, Any]]:
    """Grow and measure stage by stage; ``on_stage`` reports after each (a long run that
    is stopped early still leaves the stages it finished)."""
    sizes = _stage_sizes(args)
    backend = SQLiteBackend(db, embedder=embedder, extraction=args.extraction)
    convs: list[tuple[str, str]] = []
    rng = random.Random(args.seed + 1)
    seen: set[str] = set()
    stages: list[dict[str, Any]] = []
    try:
        total = 0
        for stage, size in enumerate(sizes):
            say(args, f"[{NAME}] stage {stage}: growing to {size} messages")
            grown = await _grow(args, backend, embedder, stage, size - total, convs)
            total += grown["messages_added"]
            say(args, f"[{NAME}] stage {stage}: searching ({args.queries} queries per kind)")
            search = await _search(args, backend, convs, rng, seen)
            counts = (await asyncio.to_thread(backend.info))["counts"]
            stages.append(
                {
                    "size": size,
                    "counts": counts,
                    "ingest": grown,
                    "db_bytes": file_size(db),
                    "rss_bytes": _rss_bytes(),
                    "search": search,
                }
            )
            on_stage(stages)
    finally:
        await backend.aclose()
    return stages


def _verdicts(stages: list[dict[str, Any]]) -> dict[str, Any]:
    first, last = stages[0], stages[-1]
    growth = {
        kind: last["search"][kind]["p95_ms"] / first["search"][kind]["p95_ms"]
        if first["search"][kind]["p95_ms"]
        else None
        for kind in KINDS
    }
    ratios = [s["ingest"]["ingest_over_raw"] for s in stages if s["ingest"]["ingest_over_raw"]]
    return {
        "p95_growth_first_to_last": growth,
        "conversation_search_flat": growth["conversation"] is not None
        and growth["conversation"] <= TARGET_FLAT,
        "ingest_over_raw_min": min(ratios) if ratios else None,
        "ingest_target_met": bool(ratios) and min(ratios) >= TARGET_INGEST_RATIO,
    }


def render(results: dict[str, Any]) -> str:
    stages = results["stages"]
    done = (
        ""
        if results["complete"]
        else (
            f"  (stages {len(stages)} of {len(results['planned_sizes'])}: the run goes on, "
            "this is what it had finished)"
        )
    )
    lines = [
        f"nams-local benchmark: {NAME}{done}",
        f"  embedder {results['embedder']}; {results['settings']['users']} users; new "
        f"conversations of {results['settings']['messages_per_conversation']} messages per "
        f"stage; entities {results['settings']['entities_per_message']} per message",
        "",
        f"  {'messages':>9} {'convs':>7} {'entities':>8} {'ingest/s':>9} {'raw/s':>7} "
        f"{'ratio':>6} {'1-call/s':>8} {'ratio':>6} {'db':>10} {'rss':>10}",
    ]
    for s in stages:
        c, g = s["counts"], s["ingest"]
        ratio = f"{g['ingest_over_raw']:.2f}" if g["ingest_over_raw"] else "-"
        one = f"{g['ingest_over_raw_one_call']:.2f}" if g["ingest_over_raw_one_call"] else "-"
        lines.append(
            f"  {c['messages']:>9} {c['conversations']:>7} {c['entities']:>8} "
            f"{g['ingest_per_second']:>9.1f} {g['raw_embed_per_second']:>7.1f} {ratio:>6} "
            f"{g['raw_one_call_per_second']:>8.1f} {one:>6} "
            f"{mb(s['db_bytes']):>10} {mb(s['rss_bytes']):>10}"
        )
    lines += [
        f"  ingest/s: the stage's add_messages rate (store + embed + index, extraction "
        f"{results['settings']['extraction']}); raw/s: the bare embedder on a sample of the "
        "same bulks, timed beside them;",
        "  1-call/s: the bare embedder on the stage's texts in one call (length-batched, its "
        "best case); ratio: ingest/s over each",
        "",
        "  search latency, ms       " + " ".join(f"{s['size']:>17}" for s in stages),
        "  " + " " * 25 + " ".join(f"{'p50':>8} {'p95':>8}" for _ in stages),
    ]
    for kind, label in KINDS.items():
        cells = " ".join(
            f"{s['search'][kind]['p50_ms']:>8.2f} {s['search'][kind]['p95_ms']:>8.2f}"
            for s in stages
        )
        lines.append(f"  {label[:25]:<25}{cells}")
    v = results["verdict"]
    growth = v["p95_growth_first_to_last"]
    lines += [
        "",
        "  p95 growth from the first to the last stage: "
        + ", ".join(f"{k} {g:.2f}x" for k, g in growth.items() if g is not None),
        f"  per-conversation search p95 within {TARGET_FLAT}x: "
        f"{'met' if v['conversation_search_flat'] else 'MISSED'}; ingest / raw embed >= "
        f"{TARGET_INGEST_RATIO}: "
        + (
            f"{v['ingest_over_raw_min']:.2f} ({'met' if v['ingest_target_met'] else 'MISSED'})"
            if v["ingest_over_raw_min"] is not None
            else "not measured"
        ),
    ]
    return "\n".join(lines)


def _panels(results: dict[str, Any]) -> list[BarGroup]:
    stages = results["stages"]
    sizes = [f"{s['size']:,}" for s in stages]
    return [
        BarGroup(
            "ingest rate (msg/s)",
            "messages / s",
            sizes,
            {
                "add_messages": [s["ingest"]["ingest_per_second"] for s in stages],
                "raw, same bulks": [s["ingest"]["raw_embed_per_second"] for s in stages],
                "raw, one call": [s["ingest"]["raw_one_call_per_second"] for s in stages],
            },
        ),
        BarGroup(
            "search p95 (ms)",
            "ms",
            sizes,
            {kind: [s["search"][kind]["p95_ms"] for s in stages] for kind in KINDS},
        ),
        BarGroup(
            "size (MB)",
            "MB",
            sizes,
            {
                "database": [s["db_bytes"] / 1e6 for s in stages],
                "RSS": [s["rss_bytes"] / 1e6 for s in stages],
            },
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.db is not None and args.db.exists():
        parser.error(f"--db {args.db} exists; the benchmark grows a fresh database")
    started = machine()
    embedder: BaseEmbedder = chosen_embedder(args)
    embedder.embed(["warm-up: load the model before anything is timed"])
    planned = _stage_sizes(args)

    def report(stages: list[dict[str, Any]]) -> None:
        results = _results(args, started, embedder, stages, planned)
        publish(args, NAME, results, render(results), argv=argv, panels=_panels(results))

    with tempfile.TemporaryDirectory(prefix="nams-bench-scale-") as tmp:
        db = args.db or Path(tmp) / "scale.sqlite3"
        asyncio.run(_run(args, db, embedder, report))
    return 0


def _results(
    args: argparse.Namespace,
    started: dict[str, Any],
    embedder: BaseEmbedder,
    stages: list[dict[str, Any]],
    planned: list[int],
) -> dict[str, Any]:
    results: dict[str, Any] = {
        "planned_sizes": planned,
        "complete": len(stages) == len(planned),
        "machine": started,
        "embedder": embedder.name,
        "settings": {
            "users": args.users,
            "messages_per_conversation": args.messages_per_conversation,
            "entities_per_message": args.entities_per_message,
            "extraction": args.extraction,
            "queries": args.queries,
            "seed": args.seed,
        },
        "stages": stages,
    }
    results["verdict"] = _verdicts(stages)
    return results


if __name__ == "__main__":
    raise SystemExit(main())
