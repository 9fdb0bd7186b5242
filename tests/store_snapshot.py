"""Every row of every table of a SQLite store, to show that a request changed nothing.

The hostile-input suites take one before and after each refused (or read-only) request: a
count would miss an update in place, a comparison of all rows misses nothing.

Except FTS5's segment b-trees (``<table>_data``, ``<table>_idx``): the writer merges them
while idle (``backends/sqlite/fts_merges.py``), which rewrites the same postings into fewer
b-trees at any moment. What an index holds is still compared, through its ``_content``
and ``_docsize`` rows (one per indexed row, changed by every insert and delete).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from backends.sqlite import SQLiteBackend

__all__ = ["Snapshot", "snapshot"]

Snapshot = dict[str, list[tuple[Any, ...]]]

#: FTS5's segment b-trees, merged at any moment by the idle writer (module docstring).
_SEGMENT_TABLES = ("_fts_data", "_fts_idx")


def _dump(conn: Connection) -> Snapshot:
    names = conn.exec_driver_sql(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    ).scalars()
    kept = [name for name in names if not name.endswith(_SEGMENT_TABLES)]
    return {
        name: [tuple(row) for row in conn.exec_driver_sql(f'SELECT * FROM "{name}"')]
        for name in kept
    }


def snapshot(backend: SQLiteBackend) -> Snapshot:
    """Read on the store's own worker thread (after any write it is running)."""
    store = backend.store
    return store.run_sync(_dump, store.conn)
