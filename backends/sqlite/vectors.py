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
from typing import Literal, Protocol

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Connection, text

#: One vector, and a batch of vectors (rows), as the embedders return them.
Vector = NDArray[np.float32]
Vectors = NDArray[np.float32]

__all__ = [
    "CHUNK_SIZE",
    "NumpyIndex",
    "SqliteVecIndex",
    "Vector",
    "VectorIndex",
    "Vectors",
    "make_index",
]

CHUNK_SIZE = 32

IndexKind = Literal["sqlite-vec", "numpy"]


class VectorIndex(Protocol):
    kind: IndexKind
    table: str

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


class SqliteVecIndex:
    """A ``vec0`` virtual table with a partition key and a filterable ``sub`` column."""

    kind: IndexKind = "sqlite-vec"

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

    def delete(self, conn: Connection, pks: Sequence[int]) -> None:
        if pks:
            conn.execute(
                text(f"DELETE FROM {self.table} WHERE rowid = :pk"), [{"pk": pk} for pk in pks]
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


class NumpyIndex:
    """Vectors as BLOBs in a plain table, searched by brute force in numpy.

    Correct everywhere (no extension needed), linear in the partition's size.
    """

    kind: IndexKind = "numpy"

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

    def delete(self, conn: Connection, pks: Sequence[int]) -> None:
        if pks:
            conn.execute(
                text(f"DELETE FROM {self.table} WHERE pk = :pk"), [{"pk": pk} for pk in pks]
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
        sims = matrix @ _as_f32(vector)
        take = min(k, len(rows))
        top = np.argpartition(-sims, take - 1)[:take]
        top = top[np.argsort(-sims[top], kind="stable")]
        return [(int(rows[i][0]), float(sims[i])) for i in top]


def _params(
    rows: Sequence[tuple[int, str, str]], vectors: NDArray[np.float32]
) -> list[dict[str, object]]:
    return [
        {"pk": pk, "part": part, "sub": sub, "embedding": vec.tobytes()}
        for (pk, part, sub), vec in zip(rows, _as_f32(vectors), strict=True)
    ]


def _as_f32(array: NDArray[np.floating]) -> NDArray[np.float32]:
    return np.ascontiguousarray(array, dtype=np.float32)


def make_index(kind: IndexKind, name: str, dimension: int) -> VectorIndex:
    if kind == "sqlite-vec":
        return SqliteVecIndex(name, dimension)
    return NumpyIndex(name, dimension)
