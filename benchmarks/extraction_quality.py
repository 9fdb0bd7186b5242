"""Quality and speed of the default, rule-based extractor on the hand-annotated corpus.

Quality: entity and relationship precision, recall and F1 (micro-averaged, per type and
per corpus split) from ``nams_local.extraction.quality`` — the same code the unit test
asserts its floors with. The ``heldout`` split was written after the extractor and never
used to tune it, so it is the honest estimate of how the rules do on new chat.

Speed: ``extract_sync`` timed over every corpus message, ``--repeat`` passes, reported as
messages per second and microseconds per message (mean, p50, p95 of single calls, and
the process's CPU time per message, which other tenants of a shared box do not inflate). The
extractor runs on every stored message, so this must stay far below the embedder's cost
(~8 ms per message for the default MiniLM on the reference box).

Run ``python -m benchmarks extraction_quality --help`` for the options.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from nams_local.extraction.quality import (
    DEFAULT_CORPUS,
    CorpusMessage,
    QualityReport,
    evaluate,
    load_corpus,
)
from nams_local.extraction.rules import RuleExtractor, extract_sync

from ._common import percentile, positive, say
from ._report import add_report_options, publish

__all__ = ["main"]

NAME = "extraction_quality"
SPLITS = ("all", "dev", "dev2", "heldout")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"python -m benchmarks {NAME}",
        description="Precision/recall and speed of the rule-based extractor on the corpus.",
    )
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="default: %(default)s")
    parser.add_argument(
        "--repeat", type=positive, default=50, help="timed passes over the corpus, default: 50"
    )
    parser.add_argument(
        "--errors", action="store_true", help="also list every missed and extra item"
    )
    add_report_options(parser)
    return parser


def measure_speed(corpus: list[CorpusMessage], repeat: int) -> dict[str, float]:
    """Time ``extract_sync`` on every message, ``repeat`` passes (after one warm-up pass)."""
    inputs = [m.as_input() for m in corpus]
    for message in inputs:
        extract_sync(message)
    samples: list[float] = []
    clock = time.perf_counter
    cpu_start = time.process_time()
    start = clock()
    for _ in range(repeat):
        for message in inputs:
            t0 = clock()
            extract_sync(message)
            samples.append(clock() - t0)
    total = clock() - start
    cpu = time.process_time() - cpu_start
    tokens = sum(len(m.text.split()) for m in corpus) * repeat
    return {
        "messages": len(samples),
        "seconds": total,
        "messages_per_second": len(samples) / total if total > 0 else 0.0,
        "mean_us": sum(samples) / len(samples) * 1e6 if samples else 0.0,
        # CPU time of this process: what the extractor costs without the other tenants
        # of a shared box (wall-clock figures above include their load).
        "cpu_mean_us": cpu / len(samples) * 1e6 if samples else 0.0,
        "p50_us": percentile(samples, 50) * 1e6,
        "p95_us": percentile(samples, 95) * 1e6,
        "max_us": max(samples, default=0.0) * 1e6,
        "mean_words_per_message": tokens / len(samples) if samples else 0.0,
    }


async def _quality(corpus: list[CorpusMessage]) -> dict[str, QualityReport]:
    extractor = RuleExtractor()
    out: dict[str, QualityReport] = {}
    for split in SPLITS:
        part = [m for m in corpus if split == "all" or m.split == split]
        if part:
            out[split] = await evaluate(extractor, part)
    return out


def _row(label: str, score: dict[str, float]) -> str:
    return (
        f"  {label:<26} {score['precision']:>9.3f} {score['recall']:>7.3f} {score['f1']:>7.3f}"
        f" {int(score['tp']):>5} {int(score['fp']):>5} {int(score['fn']):>5}"
    )


def render(results: dict[str, Any]) -> str:
    machine, speed, quality = results["machine"], results["speed"], results["quality"]
    load = machine["load_average_at_start"]
    load_text = f", load avg at start {' '.join(f'{x:.2f}' for x in load)}" if load else ""
    header = f"  {'':<26} {'precision':>9} {'recall':>7} {'f1':>7} {'tp':>5} {'fp':>5} {'fn':>5}"
    lines = [
        f"nams-local benchmark: {NAME}  ({results['finished_at']})",
        f"  machine    {machine['cpu_count']} cores, {machine['platform']}{load_text}",
        f"  python     {machine['python']}",
        f"  corpus     {results['corpus']['path']}: {results['corpus']['messages']} messages "
        f"({', '.join(f'{k} {v}' for k, v in results['corpus']['splits'].items())})",
        "",
        "Quality by split (micro-averaged)",
        header,
    ]
    for split, report in quality.items():
        lines.append(_row(f"{split}: entities", report["entities"]))
        lines.append(_row(f"{split}: relationships", report["relationships"]))
        lines.append(_row(f"{split}: user names", report["user_names"]))
    everything = quality["all"]
    lines += ["", "Entities by type (all splits)", header]
    lines += [_row(kind, score) for kind, score in everything["entity_types"].items()]
    lines += ["", "Relationships by type (all splits)", header]
    lines += [_row(kind, score) for kind, score in everything["relationship_types"].items()]
    lines += [
        "",
        f"Speed: extract_sync, {speed['messages']} calls ({results['repeat']} passes, "
        f"mean {speed['mean_words_per_message']:.1f} words per message)",
        f"  {speed['messages_per_second']:,.0f} messages/s; per message: mean "
        f"{speed['mean_us']:.0f} us, p50 {speed['p50_us']:.0f} us, p95 {speed['p95_us']:.0f} us, "
        f"max {speed['max_us']:.0f} us",
        f"  CPU time per message (this process only): mean {speed['cpu_mean_us']:.0f} us",
    ]
    return "\n".join(lines)


def _shown(path: Path) -> str:
    """The corpus path relative to the working directory when it is below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    corpus = load_corpus(args.corpus)
    say(args, f"[{NAME}] scoring {len(corpus)} messages from {args.corpus}")
    reports = asyncio.run(_quality(corpus))
    say(args, f"[{NAME}] timing {args.repeat} passes")
    speed = measure_speed(corpus, args.repeat)
    splits: dict[str, int] = {}
    for message in corpus:
        splits[message.split] = splits.get(message.split, 0) + 1
    results: dict[str, Any] = {
        "benchmark": NAME,
        "argv": list(sys.argv[1:] if argv is None else argv),
        "finished_at": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": {
            "cpu_count": os.cpu_count(),
            "platform": platform.platform(),
            "python": f"{platform.python_version()} ({platform.python_implementation()})",
            "load_average_at_start": list(load) if load is not None else None,
        },
        "corpus": {"path": _shown(args.corpus), "messages": len(corpus), "splits": splits},
        "repeat": args.repeat,
        "quality": {split: report.to_json() for split, report in reports.items()},
        "speed": speed,
    }
    publish(args, NAME, results, render(results), argv=argv, panels=[])
    if args.errors:
        print("\nMisses and extras (all splits):")
        print("\n".join(f"  {line}" for line in reports["all"].errors))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
