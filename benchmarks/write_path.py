"""Write throughput of the local engine against concurrency, beside the bare embedder.

Concurrent writers each own a conversation and write the seeded chat texts one
``add_message`` at a time. A write is acknowledged once its message, full-text entry and
queue rows are committed (the writer lane commits every write waiting in its queue as one
group); the vector lane then embeds what arrived in batches. So the rate counted here is
**messages acknowledged *and* embedded per second**: the clock runs until the vector lane
has drained, and ack latency (p50/p95) is reported beside it. For reference, the same
run times the bare embedder on the same texts in batches of ``vector_lane.BATCH`` — the
floor a write path whose cost is the embedder's batched cost approaches.

Phases (a fresh file store each, so WAL commits are real): 1, 8 and 32 concurrent writers
(``--concurrency``), each writing ``--messages`` messages in total, extraction ``off`` by
default (``--extraction background`` adds the extraction queue to the same clock: it runs
until the queue is done too). The bare embedder is timed between phases, so every phase
shares the machine's noise with a measurement of the floor.

Run ``python -m benchmarks write_path --help`` for the options.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backends.sqlite import SQLiteBackend
from backends.sqlite.vector_lane import BATCH
from nams_local.embeddings import BaseEmbedder, HashingEmbedder, default_embedder

from ._common import positive, say
from ._report import BarGroup, add_report_options, publish
from ._workload import generate

__all__ = ["main"]

NAME = "write_path"


@dataclass
class Phase:
    writers: int
    messages: int = 0
    seconds: float = 0.0
    raw_seconds: float = 0.0
    raw_texts: int = 0
    acks_ms: list[float] = field(default_factory=list)
    commits: int = 0
    units: int = 0
    largest_group: int = 0

    @property
    def rate(self) -> float:
        return self.messages / self.seconds if self.seconds else 0.0

    @property
    def raw_rate(self) -> float:
        return self.raw_texts / self.raw_seconds if self.raw_seconds else 0.0

    def ack(self, q: int) -> float:
        if not self.acks_ms:
            return 0.0
        ordered = sorted(self.acks_ms)
        return ordered[min(len(ordered) - 1, len(ordered) * q // 100)]

    def as_dict(self) -> dict[str, Any]:
        return {
            "writers": self.writers,
            "messages": self.messages,
            "messages_per_second": round(self.rate, 1),
            "raw_embedder_texts_per_second": round(self.raw_rate, 1),
            "ratio_to_raw_embedder": round(self.rate / self.raw_rate, 3) if self.raw_rate else 0,
            "ack_p50_ms": round(self.ack(50), 2),
            "ack_p95_ms": round(self.ack(95), 2),
            "ack_mean_ms": round(statistics.fmean(self.acks_ms), 2) if self.acks_ms else 0,
            "commits": self.commits,
            "mean_group": round(self.units / self.commits, 2) if self.commits else 0,
            "largest_group": self.largest_group,
        }


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks {NAME}", description=__doc__)
    parser.add_argument("--messages", type=positive, default=1000, help="messages per phase")
    parser.add_argument(
        "--concurrency",
        default="1,8,32",
        help="comma-separated numbers of concurrent writers (default 1,8,32)",
    )
    parser.add_argument(
        "--extraction", choices=("off", "background"), default="off", help="default off"
    )
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument(
        "--hashing", action="store_true", help="use the hashing embedder (smoke tests only)"
    )
    add_report_options(parser)
    return parser


def _embedder(args: argparse.Namespace) -> BaseEmbedder:
    # A fresh instance per use: no query cache carries over between phases.
    return HashingEmbedder() if args.hashing else default_embedder()


def _time_raw(embedder: BaseEmbedder, texts: list[str], phase: Phase) -> None:
    for start in range(0, len(texts), BATCH):
        batch = texts[start : start + BATCH]
        began = time.perf_counter()
        embedder.embed(batch)
        phase.raw_seconds += time.perf_counter() - began
        phase.raw_texts += len(batch)


async def _phase(args: argparse.Namespace, phase: Phase, texts: list[str], db: Path) -> None:
    writers = phase.writers
    async with SQLiteBackend(db, embedder=_embedder(args), extraction=args.extraction) as engine:
        convs = [await engine.create_conversation(user_id=f"user-{i}") for i in range(writers)]
        share = [texts[i::writers] for i in range(writers)]

        async def writer(conversation_id: str, mine: list[str]) -> None:
            for n, text in enumerate(mine):
                began = time.perf_counter()
                await engine.add_message(
                    conversation_id, "user" if n % 2 == 0 else "assistant", text
                )
                phase.acks_ms.append((time.perf_counter() - began) * 1000.0)

        writer_lane = engine.store.writer
        commits, units = writer_lane.commits, writer_lane.units
        began = time.perf_counter()
        await asyncio.gather(
            *(writer(conv.id, mine) for conv, mine in zip(convs, share, strict=True))
        )
        lane = engine.store.vector_lane
        if lane is not None:
            await lane.drained()
        if args.extraction != "off":
            await engine.wait_for_extraction()
        phase.seconds = time.perf_counter() - began
        phase.messages = len(texts)
        phase.commits = writer_lane.commits - commits
        phase.units = writer_lane.units - units
        phase.largest_group = writer_lane.largest_group


async def _run(args: argparse.Namespace) -> list[Phase]:
    levels = [int(x) for x in str(args.concurrency).split(",") if x.strip()]
    if not levels or min(levels) < 1:
        raise SystemExit("--concurrency needs positive integers")
    workload = generate(
        users=max(levels), conversations_per_user=1, messages=args.messages * len(levels),
        entities=0, seed=args.seed,
    )  # fmt: skip
    texts = [t.content for conv in workload.conversations for t in conv.turns]
    phases = []
    with tempfile.TemporaryDirectory(prefix="nams-write-path-") as tmp:
        for i, writers in enumerate(levels):
            mine = texts[i * args.messages : (i + 1) * args.messages]
            say(args, f"[{NAME}] {writers} concurrent writer(s): {len(mine)} messages")
            raw = _embedder(args)
            half = len(mine) // 2
            phase = Phase(writers)
            _time_raw(raw, mine[:half], phase)  # the floor, measured around the phase
            await _phase(args, phase, mine, Path(tmp) / f"w{writers}.db")
            _time_raw(raw, mine[half:], phase)
            phases.append(phase)
    return phases


def _table(phases: list[Phase], extraction: str) -> str:
    lines = [
        f"{'writers':>7} {'msgs':>6} {'msg/s (acked+embedded)':>23} {'raw embed texts/s':>18} "
        f"{'ratio':>6} {'ack p50 ms':>11} {'ack p95 ms':>11} {'commits':>8} {'mean group':>11}"
    ]
    for p in phases:
        d = p.as_dict()
        lines.append(
            f"{p.writers:>7} {p.messages:>6} {p.rate:>23.1f} {p.raw_rate:>18.1f} "
            f"{d['ratio_to_raw_embedder']:>6.2f} {d['ack_p50_ms']:>11.2f} {d['ack_p95_ms']:>11.2f} "
            f"{p.commits:>8} {d['mean_group']:>11.2f}"
        )
    lines.append("")
    lines.append(
        f"extraction {extraction}; raw embedder in batches of {BATCH} on the same texts, "
        "timed around each phase"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    phases = asyncio.run(_run(args))
    table = _table(phases, args.extraction)
    results: dict[str, Any] = {
        "embedder": "hashing" if args.hashing else "default",
        "extraction": args.extraction,
        "phases": [p.as_dict() for p in phases],
    }
    panels = [
        BarGroup(
            title="throughput vs concurrent writers",
            ylabel="messages/s",
            categories=[f"{p.writers} writers" for p in phases],
            values={
                "engine (acked + embedded)": [p.rate for p in phases],
                "bare embedder, batched": [p.raw_rate for p in phases],
            },
        ),
        BarGroup(
            title="ack latency",
            ylabel="ms",
            categories=[f"{p.writers} writers" for p in phases],
            values={"p50": [p.ack(50) for p in phases], "p95": [p.ack(95) for p in phases]},
        ),
    ]
    publish(args, NAME, results, table, argv=argv, panels=panels)
    return 0
