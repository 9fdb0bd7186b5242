"""Keeping a store's in-memory mirrors true when other processes write the same file.

A store holds per-workspace state in memory — the entity graph mirror with its resolution
index (``graph.py``) and the loaded entity-vector partitions (``vectors.CachedIndex``) —
patched by its own writes. Another process (a second ``nams-local serve``, a script with
its own ``SQLiteBackend``) writing the same file does not patch them, so without a check
they would answer from the past (a neighbourhood of an entity they never saw, a graph that
keeps a deleted node, a resolution that creates ``Lima`` twice).

The change signal has two levels, so the common case costs one pragma:

* ``PRAGMA data_version`` on the writer's connection changes exactly when *another*
  connection committed since the last look (the connection's own commits never change it).
  Unchanged: nothing to do.
* Changed: which workspaces changed? Triggers on ``entities`` and ``relationships`` (stored
  in the file, so every writer of the file fires them, whatever its version) stamp the
  workspace's row of ``nams_generations`` with a global, increasing number. The store
  reads the rows stamped after its high-water mark (an indexed range read) and forgets the
  mirrors of those workspaces; they reload from SQLite on their next use. Its own stamps
  (reported by a TEMP trigger, visible to this connection only) are not news to it.

Every unit of work on the writer starts with ``BEGIN IMMEDIATE``: the write lock is taken
before anything is read (``busy_timeout`` waits for another process's writer instead of a
deferred transaction failing at its first write), and no other process can commit until
this unit ends, so what the revalidation saw stays true for the whole unit — a name
resolved against the mirror cannot be created meanwhile by someone else. The unique
resolution key (``entity_keys.py``) is the schema's guarantee on top of that.

The mirrors are writer-thread state: reader threads run SQL only and need no signal
(each of their transactions reads the file as it is).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection, Engine, event, exc

from nams_local.errors import BackendUnavailableError

from .entity_snapshots import SnapshotIndex
from .file_identity import FileIdentity

logger = logging.getLogger("nams_local.sqlite")

__all__ = ["GENERATIONS_DDL", "Freshness", "guard_writer"]

_STAMP = (
    "INSERT INTO nams_generations(workspace, n) VALUES ({row}.workspace, "
    "(SELECT coalesce(max(n), 0) + 1 FROM nams_generations)) "
    "ON CONFLICT(workspace) DO UPDATE SET n = excluded.n"
)


def _trigger(table: str, when: str, row: str) -> str:
    name = f"nams_stamp_{table}_{when.split()[0].lower()}"
    return (
        f"CREATE TRIGGER IF NOT EXISTS {name} AFTER {when} ON {table} "
        f"BEGIN {_STAMP.format(row=row)}; END"
    )


#: The stamps and the triggers that write them (idempotent; run by the schema migration).
#: Updates stamp only when a column some mirror holds changes (not ``updated_at``, scores).
GENERATIONS_DDL = (
    "CREATE TABLE IF NOT EXISTS nams_generations (workspace TEXT PRIMARY KEY, n INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS ix_nams_generations_n ON nams_generations(n)",
    _trigger("entities", "INSERT", "NEW"),
    _trigger("entities", "UPDATE OF workspace, name, type, description, merged_into_pk", "NEW"),
    _trigger("entities", "DELETE", "OLD"),
    _trigger("relationships", "INSERT", "NEW"),
    _trigger(
        "relationships",
        "UPDATE OF workspace, source_pk, target_pk, type, properties, confidence",
        "NEW",
    ),
    _trigger("relationships", "DELETE", "OLD"),
)

#: Reports this connection's own stamps to Python (TEMP: no other connection sees them).
_OWN_STAMPS = tuple(
    f"CREATE TEMP TRIGGER IF NOT EXISTS nams_own_stamp_{when.lower()} AFTER {when} "
    "ON main.nams_generations BEGIN SELECT nams_own_stamp(NEW.workspace, NEW.n); END"
    for when in ("INSERT", "UPDATE")
)


class Freshness:
    """Which workspaces' mirrors the writer must forget before its next unit of work."""

    def __init__(
        self, drop_graph: Callable[[str], None], entity_vectors: SnapshotIndex | None
    ) -> None:
        self._drop_graph = drop_graph
        self._entity_vectors = entity_vectors
        self._data_version: int | None = None
        self._high_water = 0
        #: Stamps this connection wrote: committed, and pending in the open transaction.
        self._own: dict[str, int] = {}
        self._pending: dict[str, int] = {}
        #: Workspaces stamped in a savepoint that was rolled back: their stamp is unknown.
        self._unsure: set[str] = set()
        #: Revalidations that found foreign commits (for tests and diagnostics).
        self.foreign_changes = 0

    def attach(self, raw: Any) -> None:
        """Install the own-stamp reporter on the writer's DB-API connection (after the
        migration created ``nams_generations``)."""
        raw.create_function("nams_own_stamp", 2, self._stamped)
        for ddl in _OWN_STAMPS:
            raw.execute(ddl)
        self._data_version = _data_version(raw)
        self._high_water = _max_stamp(raw)

    def _stamped(self, workspace: str, n: int) -> None:
        self._pending[workspace] = n

    def revalidate(self, raw: Any) -> None:
        """Forget the mirrors of workspaces another connection changed (call inside the
        unit's transaction, after the write lock is held)."""
        if self._data_version is None:
            return  # not attached yet (the migration's own transaction)
        version = _data_version(raw)
        if version == self._data_version:
            return
        self._data_version = version
        self.foreign_changes += 1
        rows = raw.execute(
            "SELECT workspace, n FROM nams_generations WHERE n > ?", (self._high_water,)
        ).fetchall()
        for workspace, n in rows:
            self._high_water = max(self._high_water, n)
            if self._own.get(workspace) != n:
                self.forget(workspace)
        self._own.clear()  # every stamp from now on is above the high-water mark

    def forget(self, workspace: str) -> None:
        self._drop_graph(workspace)
        if self._entity_vectors is not None:
            self._entity_vectors.forget(workspace)

    def committed(self, raw: Any = None) -> None:
        """The transaction is about to COMMIT: its stamps become known, and the entity
        vectors of the workspaces it stamped are published to readers
        (``entity_snapshots.py``; ``raw``: the writer's DB-API connection)."""
        vectors = self._entity_vectors
        if vectors is not None:
            for workspace in self._unsure:  # a rolled-back savepoint may have patched it
                vectors.forget(workspace)
                vectors.withdraw(workspace)
            if raw is not None and self._pending:
                sure = {w: n for w, n in self._pending.items() if w not in self._unsure}
                vectors.publish(raw, sure)
        self._own.update(self._pending)
        for workspace in self._unsure:  # treated as changed by someone else: forgotten
            self._own.pop(workspace, None)  # at the next revalidation
        self._pending.clear()
        self._unsure.clear()

    def rolled_back(self) -> None:
        self._pending.clear()
        self._unsure.clear()

    def savepoint_rolled_back(self) -> None:
        self._unsure.update(self._pending)


def _data_version(raw: Any) -> int:
    return int(raw.execute("PRAGMA data_version").fetchone()[0])


def _max_stamp(raw: Any) -> int:
    return int(raw.execute("SELECT coalesce(max(n), 0) FROM nams_generations").fetchone()[0])


def guard_writer(engine: Engine, freshness: Freshness, identity: FileIdentity | None) -> None:
    """Wrap every transaction of the writer's engine: check the file, take the write lock,
    revalidate the mirrors; before COMMIT check the file again, so no write is
    acknowledged into a deleted or replaced file."""

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        if identity is not None:
            identity.check()
        raw = _raw(conn)
        try:
            raw.execute("BEGIN IMMEDIATE")
        except Exception as error:
            if "locked" in str(error) or "busy" in str(error):
                raise BackendUnavailableError(
                    "the database file is locked by another process (waited for its writer "
                    "and gave up); try again"
                ) from error
            raise
        try:
            freshness.revalidate(raw)
        except BaseException:
            raw.rollback()
            raise

    @event.listens_for(engine, "commit")
    def _commit(conn: Connection) -> None:
        if identity is not None:
            try:
                identity.check()
            except BackendUnavailableError:
                _raw(conn).rollback()
                freshness.rolled_back()
                raise
        freshness.committed(_raw(conn))

    @event.listens_for(engine, "rollback")
    def _rollback(conn: Connection) -> None:
        freshness.rolled_back()

    @event.listens_for(engine, "rollback_savepoint")
    def _rollback_savepoint(conn: Connection, name: str, context: object) -> None:
        freshness.savepoint_rolled_back()


def _raw(conn: Connection) -> Any:
    raw = conn.connection.dbapi_connection
    if raw is None:  # pragma: no cover - a closed connection never begins
        raise exc.InvalidRequestError("the writer's connection is closed")
    return raw
