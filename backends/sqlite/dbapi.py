"""The DB-API connection under a SQLAlchemy ``Connection``, for the hot write path.

Building and compiling a SQLAlchemy Core statement costs far more CPU than SQLite takes to
run a small insert (a profile of the message write path under load put about a third of
the server's CPU in statement construction and compilation). The few statements every
message write runs are therefore fixed SQL strings executed on the DB-API connection,
whose own statement cache keeps them prepared. They run inside the transaction the
SQLAlchemy connection opened (the writer's ``BEGIN IMMEDIATE``), so grouping, rollback and
the file checks of ``freshness.guard_writer`` apply to them unchanged.

Even ``Connection.exec_driver_sql`` is not free: each call builds an execution context
and a ``CursorResult`` with its column metadata, about as much CPU as SQLite spends
running the statement. A profile of the writer thread (the no-embeddings load mix, GIL
samples) put a sixth of its time there, mostly in the statements that apply a message's
extraction. ``fetch_one``/``fetch_all``/``execute`` therefore run on the DB-API cursor
directly; the rows they return are named tuples (a class cached per column list), so
callers read ``row.pk`` as they would from a SQLAlchemy ``Row``. Every column of the
schema is ``Text``, ``Integer`` or ``Float``, which the driver returns as SQLAlchemy
would: nothing is lost by skipping its result processing.
"""

from __future__ import annotations

import functools
from collections import namedtuple
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, exc

__all__ = ["execute", "execute_many", "fetch_all", "fetch_one", "raw_connection"]

#: Statement parameters: positional (``?``) values.
Params = Sequence[Any]


def raw_connection(conn: Connection) -> Any:
    """The DB-API connection of ``conn`` (statements on it join ``conn``'s transaction)."""
    raw = conn.connection.dbapi_connection
    if raw is None:  # pragma: no cover - a closed connection runs no unit of work
        raise exc.InvalidRequestError("the connection is closed")
    return raw


@functools.lru_cache(maxsize=256)
def _shape(columns: tuple[str, ...]) -> Callable[[Iterable[Any]], Any]:
    """The named-tuple maker for rows of these columns (bounded: the SQL is the code's)."""
    # The fields are the query's columns, known only at run time (mypy cannot check them).
    row_type: Any = namedtuple("Row", columns, rename=True)  # type: ignore[misc]
    make: Callable[[Iterable[Any]], Any] = row_type._make
    return make


def _named(cursor: Any) -> Callable[[Iterable[Any]], Any]:
    return _shape(tuple(column[0] for column in cursor.description))


def execute(conn: Connection, sql: str, params: Params = ()) -> Any:
    """Run one statement in ``conn``'s transaction; returns the DB-API cursor
    (``rowcount``, ``lastrowid``)."""
    return raw_connection(conn).execute(sql, params)


def execute_many(conn: Connection, sql: str, rows: Iterable[Params]) -> None:
    """Run one statement for each parameter row (one prepared statement, one call)."""
    raw_connection(conn).executemany(sql, rows)


def fetch_all(conn: Connection, sql: str, params: Params = ()) -> list[Any]:
    """Every row of a query, as named tuples (``row.column``)."""
    cursor = raw_connection(conn).execute(sql, params)
    rows = cursor.fetchall()
    if not rows:
        return []
    make = _named(cursor)
    return [make(row) for row in rows]


def fetch_one(conn: Connection, sql: str, params: Params = ()) -> Any | None:
    """The first row of a query as a named tuple, or ``None``."""
    cursor = raw_connection(conn).execute(sql, params)
    row = cursor.fetchone()
    if row is None:
        return None
    make = _named(cursor)
    cursor.close()
    return make(row)
