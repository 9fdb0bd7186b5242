"""``main``: parse the options, check every kept database, run, then publish the results.

Every ``--db`` is checked against its sidecar before the first (long) build starts, so a
mistake in the options fails in a second rather than after minutes of building.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

from .._common import chosen_embedder
from .._report import machine_details, publish
from .build import spec_for
from .kinds import NAME
from .options import build_parser
from .report import panels, render
from .run import Plan, run
from .store import check_reuse, db_path

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0, or 2 when a database cannot be used (the reason on stderr)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    machine = machine_details()
    embedder = chosen_embedder(args)
    with tempfile.TemporaryDirectory(prefix="nams-bench-turn-") as tmp:
        plans: list[Plan] = []
        for messages in args.sizes:  # check every database before the first long build
            spec = spec_for(args, messages, embedder)
            db = db_path(args, messages) or Path(tmp) / f"turn-{messages}.sqlite3"
            try:
                marker = check_reuse(db, spec)
            except ValueError as exc:
                parser.error(str(exc))
            plans.append((spec, db, marker))
        try:
            results = asyncio.run(run(args, plans, embedder))
        except ValueError as exc:
            print(f"[{NAME}] error: {exc}", file=sys.stderr)
            return 2
    results["machine"] = machine
    results["benchmark"] = NAME
    results["argv"] = list(sys.argv[1:] if argv is None else argv)
    results["finished_at"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    results["settings"] = {
        "limit": args.limit,
        "turns": args.turns,
        "per_source_turns": args.per_source_turns,
        "per_conversation_turns": args.per_conversation_turns,
        "back_to_back": args.back_to_back,
        "pre_embedded_turns": args.pre_embedded_turns,
        "solo_turns": args.solo_turns,
        "interleaved_searches": args.interleaved_searches,
        "warmup": args.warmup,
        "seed": args.seed,
        "embedder": args.embedder,
        "cpu_count": os.cpu_count(),
        "http_turns": args.http_turns,
        "extraction": args.extraction or "engine default",
        "backends": args.backends,
    }
    publish(args, NAME, results, render(results), argv=argv, panels=panels(results))
    return 0
