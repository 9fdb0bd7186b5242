"""The DB-API connection under a SQLAlchemy ``Connection``, for the hot write path.

Building and compiling a SQLAlchemy Core statement costs far more CPU than SQLite takes to
run a small insert (a profile of the message write path under load put about a third of
the server's CPU in statement construction and compilation). The few statements every
message write runs are therefore fixed SQL strings executed on the DB-API connection,
whose own statement cache keeps them prepared. They run inside the transaction the
SQLAlchemy connection opened (the writer's ``BEGIN IMMEDIATE``), so grouping, rollback and
the file checks of ``freshness.guard_writer`` apply to them unchanged.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, exc

__all__ = ["raw_connection"]


def raw_connection(conn: Connection) -> Any:
    """The DB-API connection of ``conn`` (statements on it join ``conn``'s transaction)."""
    raw = conn.connection.dbapi_connection
    if raw is None:  # pragma: no cover - a closed connection runs no unit of work
        raise exc.InvalidRequestError("the connection is closed")
    return raw
