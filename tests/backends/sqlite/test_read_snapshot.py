"""A read unit on a reader thread reads one snapshot of the file, whatever commits meanwhile.

The DB-API driver begins a transaction only before a write, so the statements of a read
unit used to run as transactions of their own: a commit between two of them showed the
second a state the first had not seen (and each began by discarding its page cache).
``driver._snapshot_reads`` makes the unit one read transaction. These tests commit through
another connection to the file (as another process would) between two statements of one
unit; they fail without it (the second count sees the new row).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

# The store's own SQLite library: a second copy of SQLite in one process (the standard
# ``sqlite3``) would not share its locks and shared-memory index with the store's.
import sqlean.dbapi2 as sqlite3

from backends.sqlite import SQLiteBackend
from backends.sqlite.dbapi import raw_connection
from backends.sqlite.store import Ctx
from nams_local import NewMessage

#: A table of the test's own, so the other connection's write fires none of the store's
#: triggers (they call functions only the store's connections define).
COUNT = "SELECT count(*) FROM scratch"


def _commit(path: Path, *statements: str) -> None:
    """``statements`` committed by another connection to the file (as another process)."""
    with contextlib.closing(sqlite3.connect(path)) as other:
        for statement in statements:
            other.execute(statement)
        other.commit()


def _commit_a_row(path: Path) -> None:
    _commit(path, "INSERT INTO scratch (x) VALUES ('late')")


async def _seeded(path: Path) -> SQLiteBackend:
    backend = SQLiteBackend(path, embeddings=False, extraction="off")
    conversation = await backend.create_conversation("u1")
    await backend.add_messages(conversation.id, [NewMessage(role="user", content="hello")])
    _commit(
        path, "CREATE TABLE scratch (x TEXT)", "INSERT INTO scratch (x) VALUES ('a'), ('b'), ('c')"
    )
    return backend


async def test_two_statements_of_one_read_unit_see_the_same_rows(tmp_path: Path) -> None:
    path = tmp_path / "snap.sqlite3"
    backend = await _seeded(path)
    try:

        def unit(ctx: Ctx) -> tuple[int, int]:
            raw = raw_connection(ctx.conn)
            before = int(raw.execute(COUNT).fetchone()[0])
            _commit_a_row(path)
            after = int(raw.execute(COUNT).fetchone()[0])
            return before, after

        before, after = await backend.store.read(unit, Ctx(backend.store, backend.workspace))
        assert before == after == 3
        # The next unit is a new snapshot: it sees the committed row.
        now = await backend.store.read(
            lambda ctx: int(raw_connection(ctx.conn).execute(COUNT).fetchone()[0]),
            Ctx(backend.store, backend.workspace),
        )
        assert now == 4
    finally:
        await backend.aclose()


async def test_an_export_snapshot_holds_across_its_reads(tmp_path: Path) -> None:
    path = tmp_path / "snap.sqlite3"
    backend = await _seeded(path)
    try:
        with backend.store.snapshot() as read:

            def count(conn: Any) -> int:
                return int(raw_connection(conn).execute(COUNT).fetchone()[0])

            first = read(count)
            _commit_a_row(path)
            second = read(count)
        assert first == second == 3
    finally:
        await backend.aclose()
