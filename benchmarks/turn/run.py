"""One run end to end: per size, build or reuse the store, open what is measured, measure.

The order matters for what the figures mean: the embedder is loaded before anything is
timed, the store is checked against its sidecar before a turn runs, and the load average
is taken right before and after measuring (the machine is shared).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import time
from pathlib import Path
from typing import Any

from backends.sqlite import SQLiteBackend
from nams_local.embeddings import BaseEmbedder

from .._common import file_size, load_average, say
from .build import SizeSpec
from .http_backends import http_targets, store_stats
from .instruments import TimedEmbedder
from .interleaved import Store, interleaved_searches
from .kinds import NAME
from .measure import measure
from .store import build_store, check_unchanged, measured_copy

__all__ = ["Plan", "run"]

#: One size to measure: its spec, its database, and the sidecar when it is reused.
Plan = tuple[SizeSpec, Path, dict[str, Any] | None]


async def _run_size(
    args: argparse.Namespace,
    spec: SizeSpec,
    db: Path,
    marker: dict[str, Any] | None,
    embedder: BaseEmbedder,
    query_rng: random.Random,
    seen: set[str],
) -> tuple[dict[str, Any], list[list[str]]]:
    """Build or reuse ``db``, measure every kind of turn on a copy of it (the turns write:
    ``store.measured_copy``); the results and the store's ``(conversation, user)`` ids."""
    tag = f"[{NAME} {spec.messages}]"
    result: dict[str, Any] = {"spec": spec.to_json(), "database": {"path": str(db)}}
    marker = await _ready(args, spec, db, marker, embedder, tag, result)
    timed = TimedEmbedder(embedder)
    extraction: dict[str, Any] = {} if args.extraction is None else {"extraction": args.extraction}
    skipped: dict[str, str] = {}
    with measured_copy(db) as copy:

        def open_store() -> SQLiteBackend:
            """The measured store (the loopback server opens its own backend the same way)."""
            return SQLiteBackend(copy, embedder=timed, vector_index=args.vector_index, **extraction)

        backend = open_store()
        try:
            info = await asyncio.to_thread(backend.info)
            check_unchanged(db, marker, info["counts"])  # the copy is the file as it is
            async with contextlib.AsyncExitStack() as stack:
                http = await http_targets(
                    args, spec, open_store, marker["conversations"], stack, skipped, tag
                )
                n_turns = (
                    args.warmup
                    + args.turns
                    + args.per_source_turns
                    + args.per_conversation_turns
                    + args.pre_embedded_turns
                    + args.solo_turns
                    + args.http_turns * len(http)
                )
                say(args, f"{tag} measuring {n_turns} turns ({args.warmup} warm-up)")
                result["load_average_before_measuring"] = load_average()
                measured = await measure(
                    args, backend, timed, marker["conversations"], query_rng, seen, http
                )
                result["stores"] = {"in-process": store_stats(backend)} | {
                    kind: store_stats(target.served)
                    for kind, target in http.items()
                    if target.served is not None
                }
        finally:
            await backend.aclose()
    result["database"]["measured_on_a_copy"] = True
    result["skipped_backends"] = skipped
    result["back_to_back"] = args.back_to_back
    result["load_average_after_measuring"] = load_average()
    result["database"]["bytes"] = file_size(db)
    result["info"] = info
    result.update(measured)
    return result, marker["conversations"]


async def _ready(
    args: argparse.Namespace,
    spec: SizeSpec,
    db: Path,
    marker: dict[str, Any] | None,
    embedder: BaseEmbedder,
    tag: str,
    result: dict[str, Any],
) -> dict[str, Any]:
    """The store's sidecar, the store built first when it is new."""
    if marker is None:
        marker = await build_store(args, spec, db, embedder, tag)
        result["database"]["reused"] = False
    else:
        say(args, f"{tag} reusing {db} (built {marker['built_at']})")
        result["database"]["reused"] = True
    result["database"]["built_at"] = marker["built_at"]
    result["build"] = marker["build"]
    return marker


async def run(
    args: argparse.Namespace, plans: list[Plan], embedder: BaseEmbedder
) -> dict[str, Any]:
    """Every size in ``plans``, one after another, sharing the embedder and its cache;
    then, with two sizes or more, their per-conversation searches interleaved."""
    say(args, f"[{NAME}] loading embedder {embedder.name}")
    start = time.perf_counter()
    embedder.embed(["warm-up: load the model before anything is timed"])
    load_seconds = time.perf_counter() - start
    query_rng = random.Random(args.seed + 1)
    seen: set[str] = set()  # one set for all sizes: the embedder (and its cache) is shared
    sizes = []
    stores: list[Store] = []
    for spec, db, marker in plans:
        size, conversations = await _run_size(args, spec, db, marker, embedder, query_rng, seen)
        sizes.append(size)
        stores.append((spec.messages, db, conversations))
    interleaved = await interleaved_searches(args, stores, embedder, query_rng, seen)
    return {"embedder_load_seconds": load_seconds, "sizes": sizes, "interleaved": interleaved}
