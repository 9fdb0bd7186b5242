"""Every row of every table of a SQLite store, to show that a request changed nothing.

The hostile-input suites take one before and after each refused (or read-only) request: a
count would miss an update in place, a comparison of all rows misses nothing.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from backends.sqlite import SQLiteBackend

__all__ = ["Snapshot", "snapshot"]

Snapshot = dict[str, list[tuple[Any, ...]]]


def _dump(conn: Connection) -> Snapshot:
    names = conn.exec_driver_sql(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    ).scalars()
    return {
        name: [tuple(row) for row in conn.exec_driver_sql(f'SELECT * FROM "{name}"')]
        for name in list(names)
    }


def snapshot(backend: SQLiteBackend) -> Snapshot:
    """Read on the store's own worker thread (after any write it is running)."""
    store = backend.store
    return store.run_sync(_dump, store.conn)
