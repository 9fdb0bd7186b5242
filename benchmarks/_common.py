"""Helpers every benchmark shares: the options they have in common, option types, the
progress line and the small statistics, so each is declared once and means the same
everywhere (a ``--seed`` or ``--embedder`` cannot drift between two benchmarks).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from nams_local.embeddings import BaseEmbedder, HashingEmbedder, default_embedder

__all__ = [
    "EXTRACTION_MODES",
    "OptionGroup",
    "Progress",
    "add_embedder_options",
    "add_output_options",
    "add_quiet_option",
    "add_workload_options",
    "chosen_embedder",
    "file_size",
    "indexed",
    "load_average",
    "mb",
    "message_counts",
    "name_list",
    "non_negative",
    "percentile",
    "positive",
    "say",
    "time_embed",
]

EMBEDDERS = ("default", "hashing")
EMBEDDER_HELP = "default: all-MiniLM-L6-v2 int8 ONNX; hashing: model-free, for quick runs"
VECTOR_INDEXES = ("auto", "sqlite-vec", "numpy")
#: The engine's ``extraction=`` modes, for the benchmarks that let a run choose one.
EXTRACTION_MODES = ("sync", "background", "off")
#: A default for a count option: the number itself, or how the benchmark derives it
#: (``"messages / 100"``: argparse then leaves it ``None`` and the help says the rule).
Default = int | str


class OptionGroup(Protocol):
    """A parser or one of its argument groups: where a shared option is declared."""

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action: ...


# -- options -------------------------------------------------------------------------------
def add_quiet_option(group: OptionGroup) -> None:
    """``--quiet``: no progress lines on stderr (read by :func:`say` and :class:`Progress`)."""
    group.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


def add_output_options(parser: argparse.ArgumentParser) -> None:
    """``--json PATH`` and ``--quiet``, for the benchmarks that write no README section."""
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    add_quiet_option(parser)


def _count(group: OptionGroup, flag: str, default: Default) -> None:
    """One positive-count option whose help states its default (a number or a rule)."""
    if isinstance(default, str):
        group.add_argument(flag, type=positive, help=f"default: {default}")
    else:
        group.add_argument(flag, type=positive, default=default, help="default: %(default)s")


def add_workload_options(
    group: OptionGroup,
    *,
    seed: int,
    users: Default | None = None,
    conversations_per_user: Default | None = None,
    entities: Default | None = None,
) -> None:
    """The size of a seeded synthetic workload: ``--users``, ``--conversations-per-user``,
    ``--entities`` (each only when given a default) and ``--seed``, always."""
    for flag, default in (
        ("--users", users),
        ("--conversations-per-user", conversations_per_user),
        ("--entities", entities),
    ):
        if default is not None:
            _count(group, flag, default)
    group.add_argument("--seed", type=int, default=seed, help="default: %(default)s")


def add_embedder_options(group: OptionGroup, *, vector_index: bool = False) -> None:
    """``--embedder default|hashing`` (and ``--vector-index auto|sqlite-vec|numpy``)."""
    group.add_argument("--embedder", choices=EMBEDDERS, default="default", help=EMBEDDER_HELP)
    if vector_index:
        group.add_argument("--vector-index", choices=VECTOR_INDEXES, default="auto")


def chosen_embedder(args: argparse.Namespace) -> BaseEmbedder:
    """The embedder ``--embedder`` names (the model-free hashing one for quick runs)."""
    return HashingEmbedder() if args.embedder == "hashing" else default_embedder()


def message_counts(value: str) -> list[int]:
    """An argparse type: comma-separated positive message counts (``10_000`` allowed)."""
    try:
        sizes = [int(part.replace("_", "")) for part in value.split(",") if part.strip()]
    except ValueError:
        msg = f"not a comma-separated list of integers: {value!r}"
        raise argparse.ArgumentTypeError(msg) from None
    if not sizes or any(n < 1 for n in sizes):
        raise argparse.ArgumentTypeError("sizes must be positive message counts")
    return sizes


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


def name_list(choices: Sequence[str], what: str) -> Callable[[str], list[str]]:
    """An argparse type: comma-separated names, each one of ``choices`` (``what`` they are)."""

    def parse(value: str) -> list[str]:
        names = [part.strip() for part in value.split(",") if part.strip()]
        unknown = [n for n in names if n not in choices]
        if unknown:
            raise argparse.ArgumentTypeError(f"unknown {what} {unknown}; choose from {choices}")
        return names

    return parse


# -- figures -------------------------------------------------------------------------------
def percentile(samples: Sequence[float], pct: float) -> float:
    """Linear interpolation between closest ranks (numpy's default method)."""
    if not samples:
        return 0.0
    ordered = sorted(samples)
    rank = (len(ordered) - 1) * pct / 100.0
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def file_size(path: Path) -> int:
    """Bytes of the database and any WAL / shared-memory file beside it."""
    return sum(
        p.stat().st_size for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists()
    )


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (they matter on a shared box); ``None`` where
    the platform has none."""
    return list(os.getloadavg()) if hasattr(os, "getloadavg") else None


def mb(n: int) -> str:
    return f"{n / 1_000_000:.1f} MB"


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
