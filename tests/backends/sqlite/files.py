"""Doing things to a database file behind a running store's back, and reading it after."""

from __future__ import annotations

import importlib
import os
import sqlite3
from pathlib import Path

__all__ = ["SUFFIXES", "messages_in", "move_away", "queued_vectors", "swap_in"]

#: The database file and its WAL companions.
SUFFIXES = ("", "-wal", "-shm")


def move_away(path: Path, to: Path) -> None:
    """Rename the database and its WAL files (a store that has them open keeps them)."""
    for suffix in SUFFIXES:
        source = Path(f"{path}{suffix}")
        if source.exists():
            os.rename(source, f"{to}{suffix}")


def swap_in(path: Path, new: Path, to: Path) -> None:
    """Put the database file ``new`` at ``path`` in one rename, the old files kept as ``to``.

    ``move_away`` and then creating a file at the path leaves a moment in which the path
    names nothing, and a store that looks then (its background extraction, its idle
    merging) rightly says "deleted". Here the old files get their second names first
    (hard links), the new file takes the path in one ``rename``, and only then are the old
    WAL companions' names at the path removed: the path always names a file."""
    for suffix in SUFFIXES:
        source = Path(f"{path}{suffix}")
        if source.exists():
            os.link(source, f"{to}{suffix}")
    os.replace(new, path)
    for suffix in SUFFIXES[1:]:
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def messages_in(path: Path) -> list[str]:
    """The contents of every message in the file, after checking the file is whole."""
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return [content for (content,) in conn.execute("SELECT content FROM messages")]
    finally:
        conn.close()


def queued_vectors(db: Path, driver: str) -> int:
    """Rows still waiting for a vector, read through the engine's own SQLite library
    (``driver``: its DB-API module; two copies of SQLite in one process ignore each other's
    locks: docs/sharing-a-file.md)."""
    conn = importlib.import_module(driver).connect(str(db))
    try:
        (count,) = conn.execute("SELECT count(*) FROM vector_queue").fetchone()
    finally:
        conn.close()
    return int(count)
