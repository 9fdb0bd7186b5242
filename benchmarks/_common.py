"""Helpers every benchmark shares: option types and the progress line."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

__all__ = [
    "Progress",
    "add_output_options",
    "indexed",
    "non_negative",
    "positive",
    "say",
    "time_embed",
]


def add_output_options(parser: argparse.ArgumentParser) -> None:
    """``--json PATH`` and ``--quiet``, the same in every benchmark."""
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


def say(args: argparse.Namespace, text: str) -> None:
    """A progress line on stderr, unless ``--quiet``."""
    if not args.quiet:
        print(text, file=sys.stderr, flush=True)


def positive(value: str) -> int:
    """An argparse type: an integer of at least 1."""
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {number}")
    return number


def non_negative(value: str) -> int:
    """An argparse type: an integer of at least 0."""
    number = int(value)
    if number < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {number}")
    return number


BAR_WIDTH = 20


class Progress:
    """A bar on stderr at each 10% step of a long phase: count, elapsed, rate, time left.

    One line per step rather than a redrawn bar, so logs of long runs stay readable.
    """

    def __init__(self, label: str, total: int, *, enabled: bool) -> None:
        self.label = label
        self.total = total
        self.enabled = enabled and total > 0
        self.start = time.perf_counter()
        self.next_step = 1

    def update(self, done: int, measured_seconds: float | None = None) -> None:
        """Report ``done`` items; the rate uses ``measured_seconds`` when given."""
        if not self.enabled:
            return
        step = done * 10 // self.total
        if step < self.next_step:
            return
        self.next_step = step + 1
        elapsed = time.perf_counter() - self.start
        seconds = elapsed if measured_seconds is None else measured_seconds
        rate = done / seconds if seconds > 0 else 0.0
        left = (self.total - done) / rate if rate > 0 else 0.0
        filled = done * BAR_WIDTH // self.total
        bar = "#" * filled + "-" * (BAR_WIDTH - filled)
        print(
            f"  {self.label} [{bar}] {done}/{self.total} ({done * 100 // self.total}%) "
            f"{elapsed:.1f}s elapsed, {rate:.1f}/s, ~{left:.0f}s left",
            file=sys.stderr,
            flush=True,
        )


def time_embed(embedder: Any, texts: list[str]) -> float:
    """Seconds the bare embedder takes on ``texts`` (the floor ingest is compared with)."""
    start = time.perf_counter()
    embedder.embed(texts)
    return time.perf_counter() - start


async def indexed(engine: Any) -> None:
    """Until a local engine has embedded every message it acknowledged: messages are
    embedded after their write returns (``backends/sqlite/vector_lane.py``), so an ingest
    rate counts up to here, not just to the last acknowledgement."""
    lane = getattr(getattr(engine, "store", None), "vector_lane", None)
    if lane is not None:
        await lane.drained()
