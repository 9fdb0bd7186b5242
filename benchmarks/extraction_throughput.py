"""Ingest throughput with server-side extraction: what extraction costs on top of embedding.

One run, one seeded chat workload (``benchmarks._workload``), the same texts through:

- the raw embedder (``embed`` on each batch's texts — the floor nothing can beat);
- ``SQLiteBackend`` with ``extraction="off"`` (store + embed + index);
- ``SQLiteBackend`` with ``extraction="sync"`` (store + embed + index + extract entities
  and relationships + entity vectors + observations and reflections), which is what
  ``add_messages`` costs by default;

each at **bulk 100** (``add_messages``) and at **batch 1** (``add_message`` per turn, on a
prefix of the workload). Raw embedding of a batch is timed right beside the engine's add
of the same batch (alternating before/after), so both see the same machine noise.
Target (issue 5): bulk ingest with extraction ≥ 0.7 × the raw embedder.

``python -m benchmarks extraction_throughput --help`` for the options.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from backends.sqlite import SQLiteBackend
from nams_local.backend import MAX_BULK_MESSAGES
from nams_local.embeddings import BaseEmbedder, HashingEmbedder, default_embedder
from nams_local.models import NewMessage

from ._common import Progress, add_workload_options, indexed, positive, say, time_embed
from ._report import BarGroup, add_report_options, publish
from ._workload import Turn, Workload, chunks, generate

__all__ = ["main"]

TARGET_RATIO = 0.7


@dataclass
class Row:
    label: str
    batch: int
    messages: int
    engine_seconds: float
    raw_seconds: float
    entities: int = 0
    relationships: int = 0

    @property
    def rate(self) -> float:
        return self.messages / self.engine_seconds if self.engine_seconds else 0.0

    @property
    def raw_rate(self) -> float:
        return self.messages / self.raw_seconds if self.raw_seconds else 0.0

    @property
    def ratio(self) -> float:
        return self.rate / self.raw_rate if self.raw_rate else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "batch": self.batch,
            "messages": self.messages,
            "messages_per_second": round(self.rate, 1),
            "raw_embedder_per_second": round(self.raw_rate, 1),
            "ratio_to_raw_embedder": round(self.ratio, 3),
            "entities": self.entities,
            "relationships": self.relationships,
        }


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks extraction_throughput", description=__doc__
    )
    parser.add_argument("--messages", type=positive, default=2000, help="bulk phase size")
    parser.add_argument(
        "--single", type=positive, default=300, help="messages for the batch-1 phase"
    )
    add_workload_options(parser, users=20, seed=7)
    parser.add_argument(
        "--hashing", action="store_true", help="use the hashing embedder (smoke tests only)"
    )
    add_report_options(parser)
    return parser


async def _phase(
    label: str,
    workload: Workload,
    embedder: BaseEmbedder,
    raw: BaseEmbedder,
    *,
    extraction: str,
    batch: int,
    limit: int,
    quiet: bool,
) -> Row:
    """Add ``limit`` messages of the workload in batches of ``batch`` to a fresh engine."""
    row = Row(label, batch, 0, 0.0, 0.0)
    progress = Progress(label, limit, enabled=not quiet)
    async with SQLiteBackend(":memory:", embedder=embedder, extraction=extraction) as engine:  # type: ignore[arg-type]
        for conv in workload.conversations:
            if row.messages >= limit:
                break
            conversation = await engine.create_conversation(user_id=conv.user_id)
            turns: Sequence[Turn] = conv.turns[: limit - row.messages]
            for n, chunk in enumerate(chunks(turns, batch)):
                texts = [t.content for t in chunk]
                raw_first = n % 2 == 0
                if raw_first:
                    row.raw_seconds += time_embed(raw, texts)
                start = time.perf_counter()
                if batch == 1:
                    await engine.add_message(conversation.id, chunk[0].role, chunk[0].content)
                else:
                    await engine.add_messages(
                        conversation.id,
                        [NewMessage(role=t.role, content=t.content) for t in chunk],
                    )
                row.engine_seconds += time.perf_counter() - start
                if not raw_first:
                    row.raw_seconds += time_embed(raw, texts)
                row.messages += len(chunk)
                progress.update(row.messages, row.engine_seconds)
        start = time.perf_counter()
        await indexed(engine)  # messages are embedded after their ack: count until done
        row.engine_seconds += time.perf_counter() - start
        counts = engine.info()["counts"]
        row.entities, row.relationships = counts["entities"], counts["relationships"]
    return row


async def _run(args: argparse.Namespace) -> list[Row]:
    workload = generate(
        users=args.users,
        conversations_per_user=2,
        messages=args.messages,
        entities=0,
        seed=args.seed,
    )

    def fresh() -> BaseEmbedder:
        # A fresh embedder per engine and for the raw side: no cache carries over.
        return HashingEmbedder() if args.hashing else default_embedder()

    phases = [
        ("bulk, extraction off", "off", MAX_BULK_MESSAGES, args.messages),
        ("bulk, extraction sync", "sync", MAX_BULK_MESSAGES, args.messages),
        ("batch 1, extraction off", "off", 1, args.single),
        ("batch 1, extraction sync", "sync", 1, args.single),
    ]
    rows = []
    for label, extraction, batch, limit in phases:
        say(args, f"{label}: {limit} messages")
        rows.append(
            await _phase(
                label,
                workload,
                fresh(),
                fresh(),
                extraction=extraction,
                batch=batch,
                limit=limit,
                quiet=args.quiet,
            )
        )
    return rows


def _table(rows: list[Row]) -> str:
    lines = [
        f"{'phase':<26} {'msgs':>6} {'engine msg/s':>13} {'raw embed msg/s':>16} "
        f"{'ratio':>6} {'entities':>9} {'edges':>6}"
    ]
    for row in rows:
        lines.append(
            f"{row.label:<26} {row.messages:>6} {row.rate:>13.1f} {row.raw_rate:>16.1f} "
            f"{row.ratio:>6.2f} {row.entities:>9} {row.relationships:>6}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    rows = asyncio.run(_run(args))
    bulk = next(r for r in rows if r.label == "bulk, extraction sync")
    verdict = "met" if bulk.ratio >= TARGET_RATIO else "MISSED"
    table = (
        f"{_table(rows)}\n\nbulk ingest with extraction = {bulk.ratio:.2f}x the raw embedder on "
        f"the same texts, same run (target >= {TARGET_RATIO}x: {verdict})"
    )
    results = {
        "embedder": "hashing" if args.hashing else "default",
        "rows": [r.as_dict() for r in rows],
        "target_ratio": TARGET_RATIO,
    }
    panel = BarGroup(
        title="ingest / raw embedder, same texts, same run",
        ylabel="ratio",
        categories=[r.label for r in rows],
        values={"ratio": [r.ratio for r in rows]},
        target=TARGET_RATIO,
    )
    publish(args, "extraction_throughput", results, table, argv=argv, panels=[panel])
    return 0
