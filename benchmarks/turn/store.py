"""The measured SQLite database on disk: where it lives, its sidecar, build or reuse.

A build of 100,000 messages takes minutes, so ``--db`` keeps it and the next run with the
same settings reuses it. The JSON sidecar ``<db>.turn.json`` records what was built (the
spec, the counts, the conversations); a database without a matching sidecar is refused
rather than silently measured, and one whose counts moved is refused too.

The turns write (their messages, extraction, vectors), so they run on a copy of the built
file (``measured_copy``): every run measures the store as built, at the size the report
names. Until session 9 they wrote into the kept file and the sidecar followed, so a store
reused run after run grew (the "10,000" store held 29,112 messages after the runs of
sessions 1-8, its busiest conversations 132 messages).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

from backends.sqlite import SQLiteBackend
from nams_local.embeddings import BaseEmbedder

from .._common import say
from .build import SizeSpec, build_workload
from .kinds import NAME

__all__ = [
    "build_store",
    "check_reuse",
    "check_unchanged",
    "db_path",
    "measured_copy",
    "sidecar_path",
]

#: Sidecar format; bump when what is built changes, so old databases are refused.
MARKER_FORMAT = 1


def db_path(args: argparse.Namespace, messages: int) -> Path | None:
    """``--db`` for this size (``{size}`` filled in, or ``PATH-<size>.suffix`` when several
    sizes share it); ``None`` without ``--db``: the caller picks a temporary file."""
    if args.db is None:
        return None
    text = str(args.db)
    if "{size}" in text:
        return Path(text.replace("{size}", str(messages)))
    if len(args.sizes) == 1:
        return Path(args.db)
    db = Path(args.db)
    return db.with_name(f"{db.stem}-{messages}{db.suffix}")


def sidecar_path(db: Path) -> Path:
    """Where the record of what was built into ``db`` lives."""
    return Path(f"{db}.{NAME}.json")


def check_reuse(db: Path, spec: SizeSpec) -> dict[str, Any] | None:
    """The sidecar of a reusable database, ``None`` when ``db`` is to be built.

    Raises ``ValueError`` (with the reason) for a database this run must not use.
    """
    sidecar = sidecar_path(db)
    if not db.exists():
        return None
    if not sidecar.exists():
        raise ValueError(
            f"{db} exists but {sidecar} does not: not built (completely) by this benchmark; "
            "delete it or choose another --db"
        )
    try:
        marker = json.loads(sidecar.read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"{sidecar} is unreadable ({exc}); delete {db} and it") from exc
    if marker.get("benchmark") != NAME or marker.get("format") != MARKER_FORMAT:
        raise ValueError(
            f"{sidecar} is from another benchmark or format; delete {db} and {sidecar}"
        )
    recorded: dict[str, Any] = marker.get("spec", {})
    wanted = spec.to_json()
    if recorded != wanted:
        diff = ", ".join(
            f"{key}: built {recorded.get(key)!r}, asked {value!r}"
            for key, value in wanted.items()
            if recorded.get(key) != value
        )
        raise ValueError(f"{db} was built with other settings ({diff}); refusing to reuse it")
    return cast(dict[str, Any], marker)


async def build_store(
    args: argparse.Namespace, spec: SizeSpec, db: Path, embedder: BaseEmbedder, tag: str
) -> dict[str, Any]:
    """Build ``spec`` into a fresh ``db``; the sidecar, written once the build is complete."""
    say(args, f"{tag} generating workload (seed {spec.seed})")
    workload = spec.workload()
    say(args, f"{tag} building {db}")
    sidecar_path(db).unlink(missing_ok=True)
    # Built without extraction, so the store holds exactly the seeded workload.
    builder = SQLiteBackend(db, embedder=embedder, vector_index=args.vector_index, extraction="off")
    try:
        start = time.perf_counter()
        conversations, timings = await build_workload(builder, workload, spec, args.quiet)
        timings["total_seconds"] = time.perf_counter() - start
        counts = (await asyncio.to_thread(builder.info))["counts"]
    finally:
        await builder.aclose()
    marker = {
        "benchmark": NAME,
        "format": MARKER_FORMAT,
        "spec": spec.to_json(),
        "built_at": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "build": timings,
        "counts": counts,
        "conversations": conversations,
    }
    partial = sidecar_path(db).with_suffix(".partial")
    partial.write_text(json.dumps(marker) + "\n")
    partial.replace(sidecar_path(db))  # the sidecar appears only once the build is complete
    return marker


def check_unchanged(db: Path, marker: dict[str, Any], counts: dict[str, Any]) -> None:
    """Raise ``ValueError`` when ``db`` no longer holds what its sidecar recorded."""
    if counts != marker["counts"]:
        raise ValueError(
            f"{db} holds {counts}, but {sidecar_path(db)} recorded {marker['counts']}: "
            "it changed since it was built; delete both and build again"
        )


@contextlib.contextmanager
def measured_copy(db: Path) -> Iterator[Path]:
    """A copy of the built (closed) store ``db`` beside it, for the turns to write into;
    deleted afterwards, so ``db`` stays as built."""
    with tempfile.TemporaryDirectory(prefix=".turn-", dir=db.parent) as tmp:
        copy = Path(tmp) / db.name
        shutil.copyfile(db, copy)
        wal = db.with_name(db.name + "-wal")
        if wal.exists():
            shutil.copyfile(wal, copy.with_name(copy.name + "-wal"))
        yield copy
