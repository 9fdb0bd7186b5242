"""Entity vector search from reader threads: frozen snapshots of a workspace's vectors.

Every chat turn searches the workspace's entity vectors. ``vectors.CachedIndex`` holds
them in memory, but as writer-thread state: patched by the writer's own units, forgotten
when another process changed the file (``freshness.py``). Searching it therefore had to be
a writer job, so a turn's entity sources queued behind whatever the writer was doing (the
previous turn's extraction, someone else's bulk ingest) and a turn was two jobs, not one.

Here the writer *publishes* what readers may search: when a write transaction that stamped
a workspace (``nams_generations``: entities and relationships changed) commits, the
workspace's loaded partition is frozen (numpy views; the partition copies a row before it
changes it in place) and tagged with the stamp. A reader reads the workspace's stamp in
its own read transaction and uses the published snapshot only when the tags agree;
otherwise (another process wrote, or nothing was published yet) it loads the partition
from SQLite in that same transaction and offers that snapshot instead. So a reader never
answers from a state other than the one its transaction sees, whichever process wrote it.

The writer publishes only workspaces some reader has searched (a snapshot exists), so a
workspace nobody searches costs no memory; its partition loads inside the commit, once per
process and after each foreign change, so the next commits publish in O(1) (views and a
tuple of sub-scopes). A commit that overwrites or removes a vector a snapshot covers
copies the partition once (~15 MB per 10k entities at 384 dimensions); extraction's usual
commits only append or touch no vector, and copy nothing.

Publishing happens in the writer's ``commit`` event, just before SQLite's COMMIT: a COMMIT
that then fails rolls back, and the store's ``reset`` forgets every snapshot. A reader that
looks in between sees a newer tag than its transaction's and loads for itself.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Connection

from .vectors import CachedIndex, FrozenRows, VectorIndex, freeze, nearest

__all__ = ["EntitySnapshot", "SnapshotIndex", "generation_of"]


class EntitySnapshot:
    """One workspace's entity vectors as of stamp ``generation``; never changes."""

    __slots__ = ("_masks", "generation", "rows")

    def __init__(self, generation: int, rows: FrozenRows) -> None:
        self.generation = generation
        self.rows = rows
        #: Sub-scope (entity type) masks, built on first use: the user's-own-entity search
        #: filters by ``person`` on every turn. A race builds one twice, harmlessly.
        self._masks: dict[str, NDArray[np.bool_]] = {}

    def search(
        self, vector: NDArray[np.float32], k: int, sub: str | None
    ) -> list[tuple[int, float]]:
        matrix, pks, subs = self.rows
        mask = None
        if sub is not None:
            mask = self._masks.get(sub)
            if mask is None:
                mask = self._masks[sub] = np.fromiter(
                    (s == sub for s in subs), dtype=bool, count=len(subs)
                )
        return nearest(matrix, pks, np.ascontiguousarray(vector, dtype=np.float32), k, mask)


def generation_of(conn: Connection, workspace: str) -> int:
    """The workspace's stamp as ``conn``'s transaction sees it (0: never stamped)."""
    found = conn.exec_driver_sql(
        "SELECT n FROM nams_generations WHERE workspace = ?", (workspace,)
    ).scalar()
    return 0 if found is None else int(found)


class SnapshotIndex(CachedIndex):
    """A ``CachedIndex`` that readers can search too (``search_committed``)."""

    def __init__(self, inner: VectorIndex, dimension: int) -> None:
        super().__init__(inner, dimension)
        self._board: dict[str, EntitySnapshot] = {}
        self._lock = threading.Lock()
        #: Snapshots readers had to load from SQLite themselves (tests, diagnostics).
        self.reader_loads = 0

    def reset(self) -> None:
        super().reset()
        self._board.clear()

    def withdraw(self, part: str) -> None:
        """Forget the published snapshot of ``part`` (its state is not known for sure)."""
        with self._lock:
            self._board.pop(part, None)

    def _offer(self, part: str, snapshot: EntitySnapshot) -> None:
        with self._lock:
            held = self._board.get(part)
            if held is None or held.generation < snapshot.generation:
                self._board[part] = snapshot

    def search_committed(
        self,
        conn: Connection,
        vector: NDArray[np.float32],
        k: int,
        part: str,
        sub: str | None = None,
    ) -> list[tuple[int, float]]:
        """``search`` as ``conn``'s read transaction sees the file (any thread)."""
        return self.committed(conn, part).search(vector, k, sub)

    def committed(self, conn: Connection, part: str) -> EntitySnapshot:
        """The snapshot of ``part`` as ``conn``'s read transaction sees the file, loaded
        from it when the published one is of another generation (any thread). It can be
        searched on any thread afterwards: a snapshot never changes."""
        generation = generation_of(conn, part)
        snapshot = self._board.get(part)
        if snapshot is None or snapshot.generation != generation:
            snapshot = EntitySnapshot(generation, freeze(self.dimension, self.rows(conn, part)))
            self.reader_loads += 1
            self._offer(part, snapshot)
        return snapshot

    def publish(self, raw: Any, stamps: Mapping[str, int]) -> None:
        """From the writer's commit: freeze each stamped workspace that readers search,
        tagged with its stamp (``raw``: the writer's DB-API connection, in the transaction)."""
        for part, generation in stamps.items():
            if part not in self._board:
                continue
            if not self.loaded(part):
                found = raw.execute(
                    f"SELECT {self.key}, sub, embedding FROM {self.table} WHERE part = ?",
                    (part,),
                ).fetchall()
                self.seed(part, [(int(pk), str(sub), bytes(blob)) for pk, sub, blob in found])
            frozen = self.frozen(part)
            if frozen is not None:
                self._offer(part, EntitySnapshot(generation, frozen))
