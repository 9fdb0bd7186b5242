"""Per-conversation search at every size, interleaved in one run.

Issue 13 asks that a conversation's search at 100k messages stay within 1.3x of its p95
at 10k. Each size's "alone" figures are taken while that size is measured, minutes apart
from the other's, and this machine's speed moves by a fifth within the hour: the same code
gave 1.13x, 1.55x and 1.22x in three runs. Here every round asks one new query (its
vector computed first, so only the search is timed) of a random conversation in each
size's store, the sizes in alternating order, so the two p95s share the same noise.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from backends.sqlite import SQLiteBackend
from nams_local.embeddings import BaseEmbedder

from .._common import percentile, say
from .._workload import distinct_queries
from .kinds import NAME

__all__ = ["TARGET_RATIO", "Store", "interleaved_searches", "render_interleaved"]

#: The largest size's p95 at most this many times the smallest's.
TARGET_RATIO = 1.3

#: One size's store: its message count, its file, its ``(conversation, user)`` ids.
Store = tuple[int, Path, Sequence[Sequence[str]]]


def _summary(samples: list[float]) -> dict[str, float]:
    return {
        "n": len(samples),
        "p50_ms": percentile(samples, 50),
        "p95_ms": percentile(samples, 95),
        "mean_ms": statistics.fmean(samples),
    }


async def interleaved_searches(
    args: argparse.Namespace,
    stores: Sequence[Store],
    embedder: BaseEmbedder,
    query_rng: random.Random,
    seen: set[str],
) -> dict[str, Any] | None:
    """``search_messages`` on every store, round after round; ``None`` with fewer than two
    sizes or no rounds asked for."""
    rounds = args.interleaved_searches
    if len(stores) < 2 or rounds == 0:
        return None
    say(args, f"[{NAME}] {rounds} searches per size, sizes interleaved")
    pick = random.Random(args.seed + 2)
    backends = [
        (messages, SQLiteBackend(db, embedder=embedder, vector_index=args.vector_index), convs)
        for messages, db, convs in stores
    ]
    samples: dict[int, list[float]] = {messages: [] for messages, _, _ in backends}
    try:
        for i, query in enumerate(distinct_queries(query_rng, args.warmup + rounds, seen)):
            embedder.embed_query(query)  # cached: the searches below time the search alone
            order = backends if i % 2 == 0 else backends[::-1]
            for messages, backend, convs in order:
                conv_id = pick.choice(convs)[0]
                start = time.perf_counter()
                await backend.search_messages(conv_id, query, limit=args.limit)
                if i >= args.warmup:
                    samples[messages].append((time.perf_counter() - start) * 1000.0)
    finally:
        for _, backend, _ in backends:
            await backend.aclose()
    by_size = {str(messages): _summary(found) for messages, found in samples.items()}
    smallest, largest = min(samples), max(samples)
    low, high = by_size[str(smallest)]["p95_ms"], by_size[str(largest)]["p95_ms"]
    return {
        "rounds": rounds,
        "sizes": by_size,
        "p95_ratio": high / low if low > 0 else 0.0,
        "smallest": smallest,
        "largest": largest,
    }


def render_interleaved(found: dict[str, Any]) -> list[str]:
    """The section's lines, with the target's verdict."""
    lines = [
        "",
        f"Per-conversation search, sizes interleaved ({found['rounds']} rounds: one new query "
        "per round, its vector cached first, one random conversation of each size), ms",
        f"  {'messages':>10} {'n':>6} {'p50':>8} {'p95':>8} {'mean':>8}",
    ]
    for messages, row in found["sizes"].items():
        lines.append(
            f"  {int(messages):>10} {row['n']:>6} {row['p50_ms']:>8.2f} {row['p95_ms']:>8.2f} "
            f"{row['mean_ms']:>8.2f}"
        )
    ratio = found["p95_ratio"]
    verdict = "met" if ratio <= TARGET_RATIO else "MISSED"
    lines.append(
        f"  target: p95 at {found['largest']} messages within {TARGET_RATIO}x of "
        f"{found['smallest']}: {ratio:.2f}x ({verdict})"
    )
    return lines
