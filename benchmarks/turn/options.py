"""The ``turn`` benchmark's command line: what to build per size, what to measure, where.

The options every benchmark shares (``--users``, ``--seed``, ``--embedder``, the output
options, ...) come from ``benchmarks._common`` and ``benchmarks._report``; only what is
particular to a chat turn is declared here.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from .._common import (
    EXTRACTION_MODES,
    add_embedder_options,
    add_workload_options,
    message_counts,
    name_list,
    non_negative,
    positive,
)
from .._report import add_report_options
from .kinds import BACKENDS, NAME, TURN_LIMIT

__all__ = ["build_parser"]

_backend_names = name_list(BACKENDS, "backends")


#: How many turns of each kind a size measures: flag, type, default, what they are.
_TURN_COUNTS: tuple[tuple[str, Callable[[str], int], int, str], ...] = (
    ("--turns", positive, 300, "native turns"),
    (
        "--per-source-turns",
        non_negative,
        100,
        "turns with recall_turn hidden (source by source, as before it)",
    ),
    ("--per-conversation-turns", non_negative, 100, "turns with user_message_search hidden"),
    (
        "--pre-embedded-turns",
        non_negative,
        100,
        "native turns with the query embedded once up front (timed)",
    ),
    ("--solo-turns", non_negative, 100, "turns whose sources run alone one after another"),
    ("--http-turns", non_negative, 300, "turns per HTTP backend (loopback, hosted)"),
    (
        "--interleaved-searches",
        non_negative,
        300,
        "with two sizes or more: per-conversation searches per size, the sizes interleaved",
    ),
)


def _sizes(value: str) -> list[int]:
    """Message counts in the order given, one database each (so no repeats)."""
    sizes = message_counts(value)
    if len(set(sizes)) != len(sizes):
        raise argparse.ArgumentTypeError("sizes must be distinct")
    return sizes


def _backends(value: str) -> list[str]:
    """The ``--backends`` names, in-process always first (every ratio is to it)."""
    names = _backend_names(value)
    return ["in-process", *[n for n in names if n != "in-process"]]


def build_parser() -> argparse.ArgumentParser:
    """Every option of ``python -m benchmarks turn``."""
    parser = argparse.ArgumentParser(
        prog=f"python -m benchmarks {NAME}",
        description="Retrieval cost of one chat turn (all five memory sources) on the "
        "local SQLite engine.",
    )
    size = parser.add_argument_group("workload (per size)")
    size.add_argument(
        "--sizes",
        type=_sizes,
        default=[10_000],
        help="comma-separated message counts, one database each, default: 10000",
    )
    add_workload_options(
        size,
        users="messages / 100",
        conversations_per_user=10,
        entities="messages / 10",
        seed=42,
    )
    size.add_argument(
        "--relationships-per-entity",
        type=non_negative,
        default=2,
        help="outgoing edges per entity, default: %(default)s",
    )
    size.add_argument(
        "--steps-per-conversation",
        type=non_negative,
        default=3,
        help="reasoning steps per conversation (2 in 3 are direct responses), default: %(default)s",
    )

    measure = parser.add_argument_group("measurement (per size)")
    for flag, kind, default, what in _TURN_COUNTS:
        measure.add_argument(flag, type=kind, default=default, help=f"{what}, default: %(default)s")
    measure.add_argument(
        "--backends",
        type=_backends,
        default=list(BACKENDS),
        help="comma-separated, of in-process (always measured), loopback, hosted; "
        "default: all (hosted needs MEMORY_API_KEY, else it is skipped with a message)",
    )
    measure.add_argument(
        "--hosted-max-messages",
        type=positive,
        default=10_000,
        help="build the workload on hosted NAMS only for sizes up to this, default: %(default)s",
    )
    measure.add_argument(
        "--back-to-back",
        action="store_true",
        help="start each turn as soon as the last one returned, so its retrieval waits for "
        "the last turn's extraction and message vectors; default: wait for them between "
        "turns (untimed, reported), as the model call between two turns does",
    )
    measure.add_argument(
        "--warmup", type=non_negative, default=20, help="unrecorded turns, default: %(default)s"
    )
    measure.add_argument(
        "--limit", type=positive, default=TURN_LIMIT, help="memories per turn, default: 6"
    )

    engine = parser.add_argument_group("engine")
    add_embedder_options(engine, vector_index=True)
    engine.add_argument(
        "--extraction",
        choices=EXTRACTION_MODES,
        help="entity extraction while the turns write (the build never extracts); "
        "default: the engine's default, what a user gets",
    )
    engine.add_argument(
        "--db",
        type=Path,
        help="keep the database here and reuse it on the next run with the same settings "
        "(several sizes: PATH-<size>.suffix, or put {size} in PATH); default: a temp file",
    )

    add_report_options(parser)
    return parser
