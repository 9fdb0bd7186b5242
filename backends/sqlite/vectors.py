"""Vector indexes for the local engine: sqlite-vec when it loads, numpy otherwise.

Both store one float32 vector per row, keyed by the row's integer ``pk``, with a
*partition* (``part``: workspace + user for messages, workspace for entities) and a
*sub-scope* (``sub``: conversation id for messages, entity type for entities). A search
names its partition, so it never scans another tenant's vectors.

sqlite-vec's ``vec0`` allocates storage per partition in whole chunks, so the chunk size is
kept small (``CHUNK_SIZE``). Measured here on 500 partitions × 20 vectors (384 dims): chunk
128 → 99 MB on disk, 32 → 25 MB (the raw vectors are 15 MB), 8 → 19 MB; search time per
partition was 0.07–0.13 ms for all three, so 32 costs nothing at query time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NamedTuple, Protocol

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Connection, text

#: One vector, and a batch of vectors (rows), as the embedders return them.
Vector = NDArray[np.float32]
Vectors = NDArray[np.float32]

__all__ = [
    "CHUNK_SIZE",
    "CachedIndex",
    "FrozenRows",
    "IndexWrapper",
    "NumpyIndex",
    "SqliteVecIndex",
    "Vector",
    "VectorIndex",
    "Vectors",
    "freeze",
    "make_index",
    "nearest",
]

CHUNK_SIZE = 32

IndexKind = Literal["sqlite-vec", "numpy"]


class VectorIndex(Protocol):
    kind: IndexKind
    table: str
    #: The integer key column of ``table`` (``rowid`` for ``vec0``).
    key: str

    def create(self, conn: Connection) -> None: ...

    def drop(self, conn: Connection) -> None: ...

    def add(
        self,
        conn: Connection,
        rows: Sequence[tuple[int, str, str]],
        vectors: NDArray[np.float32],
    ) -> None:
        """Insert ``(pk, part, sub)`` rows with their vectors (replacing existing pks)."""
        ...

    def delete(self, conn: Connection, pks: Sequence[int]) -> None: ...

    def search(
        self,
        conn: Connection,
        vector: NDArray[np.float32],
        k: int,
        part: str,
        sub: str | None = None,
    ) -> list[tuple[int, float]]:
        """The ``k`` nearest rows as ``(pk, cosine similarity)``, most similar first."""
        ...

    def rows(self, conn: Connection, part: str) -> list[tuple[int, str, bytes]]:
        """Every ``(pk, sub, vector bytes)`` of one partition."""
        ...

    def get(self, conn: Connection, keys: Sequence[int]) -> dict[int, bytes]:
        """The stored vectors of ``keys`` (those that have one), by key (export)."""
        ...


class _TableIndex:
    """What both stored indexes do alike: rows are keyed by ``key`` in ``table``."""

    table: str
    key: str

    def delete(self, conn: Connection, pks: Sequence[int]) -> None:
        if pks:
            conn.execute(
                text(f"DELETE FROM {self.table} WHERE {self.key} = :pk"),
                [{"pk": pk} for pk in pks],
            )

    def rows(self, conn: Connection, part: str) -> list[tuple[int, str, bytes]]:
        found = conn.execute(
            text(f"SELECT {self.key}, sub, embedding FROM {self.table} WHERE part = :part"),
            {"part": part},
        ).all()
        return [(int(pk), str(sub), bytes(blob)) for pk, sub, blob in found]

    def get(self, conn: Connection, keys: Sequence[int]) -> dict[int, bytes]:
        if not keys:
            return {}
        marks = ", ".join(str(int(k)) for k in keys)
        found = conn.execute(
            text(f"SELECT {self.key}, embedding FROM {self.table} WHERE {self.key} IN ({marks})")
        ).all()
        return {int(pk): bytes(blob) for pk, blob in found}


class SqliteVecIndex(_TableIndex):
    """A ``vec0`` virtual table with a partition key and a filterable ``sub`` column."""

    kind: IndexKind = "sqlite-vec"
    key = "rowid"

    def __init__(self, name: str, dimension: int) -> None:
        self.table = f"{name}_vec"
        self.dimension = dimension

    def create(self, conn: Connection) -> None:
        conn.execute(
            text(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {self.table} USING vec0("
                "part TEXT PARTITION KEY, sub TEXT, "
                f"embedding float[{self.dimension}] distance_metric=cosine, "
                f"chunk_size={CHUNK_SIZE})"
            )
        )

    def drop(self, conn: Connection) -> None:
        conn.execute(text(f"DROP TABLE IF EXISTS {self.table}"))

    def add(
        self,
        conn: Connection,
        rows: Sequence[tuple[int, str, str]],
        vectors: NDArray[np.float32],
    ) -> None:
        if not rows:
            return
        self.delete(conn, [pk for pk, _, _ in rows])
        conn.execute(
            text(
                f"INSERT INTO {self.table}(rowid, part, sub, embedding) "
                "VALUES (:pk, :part, :sub, :embedding)"
            ),
            _params(rows, vectors),
        )

    def search(
        self,
        conn: Connection,
        vector: NDArray[np.float32],
        k: int,
        part: str,
        sub: str | None = None,
    ) -> list[tuple[int, float]]:
        where = "embedding MATCH :q AND k = :k AND part = :part"
        params: dict[str, object] = {"q": _as_f32(vector).tobytes(), "k": k, "part": part}
        if sub is not None:
            where += " AND sub = :sub"
            params["sub"] = sub
        rows = conn.execute(
            text(f"SELECT rowid, distance FROM {self.table} WHERE {where} ORDER BY distance"),
            params,
        ).all()
        # sqlite-vec gives a NULL distance when either vector is all zeros (cosine is
        # undefined): such a row is simply not similar.
        return [(int(pk), 0.0 if d is None else 1.0 - float(d)) for pk, d in rows]


class NumpyIndex(_TableIndex):
    """Vectors as BLOBs in a plain table, searched by brute force in numpy.

    Correct everywhere (no extension needed), linear in the partition's size.
    """

    kind: IndexKind = "numpy"
    key = "pk"

    def __init__(self, name: str, dimension: int) -> None:
        self.table = f"{name}_vectors"
        self.dimension = dimension

    def create(self, conn: Connection) -> None:
        conn.execute(
            text(
                f"CREATE TABLE IF NOT EXISTS {self.table} ("
                "pk INTEGER PRIMARY KEY, part TEXT NOT NULL, sub TEXT NOT NULL, "
                "embedding BLOB NOT NULL)"
            )
        )
        conn.execute(
            text(f"CREATE INDEX IF NOT EXISTS ix_{self.table}_part ON {self.table}(part, sub)")
        )

    def drop(self, conn: Connection) -> None:
        conn.execute(text(f"DROP TABLE IF EXISTS {self.table}"))

    def add(
        self,
        conn: Connection,
        rows: Sequence[tuple[int, str, str]],
        vectors: NDArray[np.float32],
    ) -> None:
        if not rows:
            return
        conn.execute(
            text(
                f"INSERT OR REPLACE INTO {self.table}(pk, part, sub, embedding) "
                "VALUES (:pk, :part, :sub, :embedding)"
            ),
            _params(rows, vectors),
        )

    def search(
        self,
        conn: Connection,
        vector: NDArray[np.float32],
        k: int,
        part: str,
        sub: str | None = None,
    ) -> list[tuple[int, float]]:
        sql = f"SELECT pk, embedding FROM {self.table} WHERE part = :part"
        params: dict[str, object] = {"part": part}
        if sub is not None:
            sql += " AND sub = :sub"
            params["sub"] = sub
        rows = conn.execute(text(sql), params).all()
        if not rows:
            return []
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(
            len(rows), self.dimension
        )
        sims = _similarities(matrix, _as_f32(vector))
        take = min(k, len(rows))
        top = np.argpartition(-sims, take - 1)[:take]
        top = top[np.argsort(-sims[top], kind="stable")]
        return [(int(rows[i][0]), float(sims[i])) for i in top]


class _Partition:
    """One partition's vectors in memory: rows packed at the front of growable arrays."""

    def __init__(self, dimension: int, loaded: list[tuple[int, str, bytes]]) -> None:
        n = len(loaded)
        capacity = max(64, 2 * n)
        self.matrix = np.zeros((capacity, dimension), dtype=np.float32)
        self.pks = np.zeros(capacity, dtype=np.int64)
        self.subs: list[str] = []
        self.row: dict[int, int] = {}
        #: A frozen view (``frozen``) reads these arrays: rows it covers are copied before
        #: they change in place; appends land past every view and need no copy.
        self.shared = False
        if n:
            self.matrix[:n] = np.frombuffer(b"".join(r[2] for r in loaded), np.float32).reshape(
                n, dimension
            )
            self.pks[:n] = [r[0] for r in loaded]
            self.subs = [r[1] for r in loaded]
            self.row = {r[0]: i for i, r in enumerate(loaded)}

    def put(self, pk: int, sub: str, vector: NDArray[np.float32]) -> None:
        at = self.row.get(pk)
        if at is None:
            at = len(self.subs)
            if at == len(self.pks):
                self.matrix = np.concatenate([self.matrix, np.zeros_like(self.matrix)])
                self.pks = np.concatenate([self.pks, np.zeros_like(self.pks)])
                self.shared = False
            self.subs.append(sub)
            self.row[pk] = at
        else:
            self._private()
        self.matrix[at] = vector
        self.pks[at] = pk
        self.subs[at] = sub

    def remove(self, pk: int) -> None:
        at = self.row.pop(pk, None)
        if at is None:
            return
        last = len(self.subs) - 1
        if at != last:  # move the last row into the hole
            self._private()
            self.matrix[at] = self.matrix[last]
            self.pks[at] = self.pks[last]
            self.subs[at] = self.subs[last]
            self.row[int(self.pks[at])] = at
        self.subs.pop()

    def _private(self) -> None:
        if self.shared:
            self.matrix = self.matrix.copy()
            self.pks = self.pks.copy()
            self.shared = False

    def frozen(self) -> FrozenRows:
        """The rows as they are now, never changed later (``_private`` copies first)."""
        n = len(self.subs)
        self.shared = True
        return FrozenRows(self.matrix[:n], self.pks[:n], tuple(self.subs))

    def search(
        self, vector: NDArray[np.float32], k: int, sub: str | None
    ) -> list[tuple[int, float]]:
        n = len(self.subs)
        mask = None
        if sub is not None and n:
            mask = np.fromiter((s == sub for s in self.subs), dtype=bool, count=n)
        return nearest(self.matrix[:n], self.pks[:n], vector, k, mask)


class FrozenRows(NamedTuple):
    """A partition's loaded rows at one moment: ``matrix[i]`` is the vector of ``pks[i]``,
    whose sub-scope is ``subs[i]``."""

    matrix: NDArray[np.float32]
    pks: NDArray[np.int64]
    subs: tuple[str, ...]


def freeze(dimension: int, rows: list[tuple[int, str, bytes]]) -> FrozenRows:
    """``rows`` (what ``VectorIndex.rows`` reads) as frozen arrays."""
    return _Partition(dimension, rows).frozen()


def nearest(
    matrix: NDArray[np.float32],
    pks: NDArray[np.int64],
    vector: NDArray[np.float32],
    k: int,
    mask: NDArray[np.bool_] | None = None,
) -> list[tuple[int, float]]:
    """The ``k`` rows most similar to ``vector`` (only where ``mask`` holds), as
    ``(pk, cosine similarity)``, best first, ties in row order."""
    n = len(pks)
    if n == 0:
        return []
    sims = _similarities(matrix, vector)
    if mask is not None:
        sims = np.where(mask, sims, -np.inf)
    take = min(k, n)
    top = np.argpartition(-sims, take - 1)[:take]
    top = top[np.argsort(-sims[top], kind="stable")]
    return [(int(pks[i]), float(sims[i])) for i in top if np.isfinite(sims[i])]


class IndexWrapper:
    """What a ``VectorIndex`` wrapping another one passes through unchanged (its kind,
    table, dimension; creating and dropping it). ``CachedIndex`` and
    ``passages.PassageIndex`` build on it."""

    def __init__(self, inner: VectorIndex, dimension: int) -> None:
        self.inner = inner
        self.kind: IndexKind = inner.kind
        self.table = inner.table
        self.key = inner.key
        self.dimension = dimension

    def create(self, conn: Connection) -> None:
        self.inner.create(conn)

    def drop(self, conn: Connection) -> None:
        self.inner.drop(conn)

    def get(self, conn: Connection, keys: Sequence[int]) -> dict[int, bytes]:
        return self.inner.get(conn, keys)


class CachedIndex(IndexWrapper):
    """A ``VectorIndex`` whose partitions are also held in memory for searching.

    Writes go to the wrapped index (the truth, on disk) and patch the loaded partitions;
    a partition loads on its first search. Used for entities: a workspace's entities are
    one partition searched by every chat turn, and scanning them from SQLite costs ~7 ms
    per 10k entities where a matrix product in memory costs well under 1 ms (the memory:
    ``4 × dimension`` bytes per entity, ~15 MB per 10k at 384 dimensions).
    """

    def __init__(self, inner: VectorIndex, dimension: int) -> None:
        super().__init__(inner, dimension)
        self._parts: dict[str, _Partition] = {}

    def reset(self) -> None:
        """Forget the loaded partitions (after a rolled-back write); they reload lazily."""
        self._parts.clear()

    def forget(self, part: str) -> None:
        """Forget one loaded partition (another process changed it); it reloads lazily."""
        self._parts.pop(part, None)

    def create(self, conn: Connection) -> None:
        self.reset()  # a subclass's in-memory state goes with the partitions
        super().create(conn)

    def drop(self, conn: Connection) -> None:
        self.reset()
        super().drop(conn)

    def add(
        self,
        conn: Connection,
        rows: Sequence[tuple[int, str, str]],
        vectors: NDArray[np.float32],
    ) -> None:
        self.inner.add(conn, rows, vectors)
        for (pk, part, sub), vector in zip(rows, _as_f32(vectors), strict=True):
            loaded = self._parts.get(part)
            if loaded is not None:
                loaded.put(pk, sub, vector)

    def delete(self, conn: Connection, pks: Sequence[int]) -> None:
        self.inner.delete(conn, pks)
        for loaded in self._parts.values():
            for pk in pks:
                loaded.remove(pk)

    def search(
        self,
        conn: Connection,
        vector: NDArray[np.float32],
        k: int,
        part: str,
        sub: str | None = None,
    ) -> list[tuple[int, float]]:
        loaded = self._parts.get(part)
        if loaded is None:
            loaded = self._parts[part] = _Partition(self.dimension, self.inner.rows(conn, part))
        return loaded.search(_as_f32(vector), k, sub)

    def rows(self, conn: Connection, part: str) -> list[tuple[int, str, bytes]]:
        return self.inner.rows(conn, part)

    def loaded(self, part: str) -> bool:
        return part in self._parts

    def seed(self, part: str, rows: list[tuple[int, str, bytes]]) -> None:
        """Hold ``rows`` (what ``rows`` reads) as the loaded partition ``part``."""
        self._parts[part] = _Partition(self.dimension, rows)

    def frozen(self, part: str) -> FrozenRows | None:
        """The loaded partition's rows, frozen (``None`` when it is not loaded)."""
        loaded = self._parts.get(part)
        return None if loaded is None else loaded.frozen()


def _params(
    rows: Sequence[tuple[int, str, str]], vectors: NDArray[np.float32]
) -> list[dict[str, object]]:
    return [
        {"pk": pk, "part": part, "sub": sub, "embedding": vec.tobytes()}
        for (pk, part, sub), vec in zip(rows, _as_f32(vectors), strict=True)
    ]


def _similarities(matrix: NDArray[np.float32], vector: NDArray[np.float32]) -> NDArray[np.float32]:
    """``matrix @ vector`` without BLAS: OpenBLAS's threads keep spinning after a call and
    measurably slow the embedder that runs next on a 2-core machine (2.3 → 3.5 ms per
    query here); einsum's single-threaded loop costs ~0.2 ms more per 10k rows."""
    out: NDArray[np.float32] = np.einsum("ij,j->i", matrix, vector, optimize=False)
    return out


def _as_f32(array: NDArray[np.floating]) -> NDArray[np.float32]:
    return np.ascontiguousarray(array, dtype=np.float32)


def make_index(kind: IndexKind, name: str, dimension: int) -> VectorIndex:
    if kind == "sqlite-vec":
        return SqliteVecIndex(name, dimension)
    return NumpyIndex(name, dimension)
