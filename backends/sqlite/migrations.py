"""Schema upgrades: an ordered list of steps, one per version.

``STEPS[n]`` upgrades a file of schema version ``n + 1`` to ``n + 2``, so the next schema
change is one more function at the end of the list (and ``schema.SCHEMA_VERSION`` one
higher). ``SQLiteStore._migrate`` runs the steps a file lacks inside the same transaction
that creates missing tables and records the new version, so an upgrade that fails at any
point leaves the file exactly as it was: SQLite's DDL (``ALTER TABLE`` included) is
transactional.

A fresh file never runs a step: ``metadata.create_all`` builds the current schema at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlalchemy import Connection

from . import schema as s

__all__ = ["STEPS", "Step", "upgrade"]

Step = Callable[[Connection], None]


def _relationship_validity(conn: Connection) -> None:
    """Version 1 → 2: relationships gain validity in time (``validity.py``).

    Edges written before validity existed keep ``valid_from`` NULL ("since we learned
    it": ``created_at`` stands in for it when ordering) and stay current.
    """
    for column in s.VALIDITY_COLUMNS:
        conn.exec_driver_sql(f"ALTER TABLE relationships ADD COLUMN {column} TEXT")
    conn.exec_driver_sql(s.OPEN_EDGES_INDEX_DDL)


STEPS: Sequence[Step] = (_relationship_validity,)


def upgrade(conn: Connection, version: int) -> int:
    """Run the steps from ``version`` to the newest; returns the version reached."""
    steps = STEPS  # read at call time: a test may replace the list
    if len(steps) + 1 != s.SCHEMA_VERSION:
        raise RuntimeError("schema.SCHEMA_VERSION must be one more than the number of steps")
    for step in steps[version - 1 :]:
        step(conn)
        version += 1
    return version
