"""What an existing database file says about itself, read without opening the engine.

Opening a store with another embedding setting than the one its vector index was built
with rebuilds (or drops) that index on open (``store._prepare_vectors``): right for a
server switching embedders, wrong for a command that only reads, such as ``export``. So
such a command asks first how the file was built, here, in a read-only connection.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

__all__ = ["has_vector_index"]


def has_vector_index(path: str | Path) -> bool | None:
    """``True``: the file's vector index was built by an embedder; ``False``: it was
    written with embeddings off; ``None``: the file says neither (missing, new, foreign)."""
    file = Path(path).expanduser()
    if str(path) == ":memory:" or not file.is_file():
        return None
    try:
        conn = sqlite3.connect(f"{file.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'vector_index'").fetchone()
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    if row is None:
        return None
    return str(row[0]) != "none"
