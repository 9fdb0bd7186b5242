"""Opening SQLite through SQLAlchemy with a DB-API driver that can load sqlite-vec.

The CPython ``sqlite3`` of a pyenv build usually cannot load extensions, so the engine
prefers ``sqlean`` (a drop-in ``sqlite3`` with extension loading and FTS5) and falls back
to the standard module. When sqlite-vec cannot be loaded the backend keeps working with a
numpy brute-force vector index, and ``DriverInfo`` says so (``nams-local info`` prints it).
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.pool import NullPool, SingletonThreadPool, StaticPool

logger = logging.getLogger("nams_local.sqlite")

__all__ = ["WAL_SIZE_LIMIT", "DriverChoice", "DriverInfo", "open_engine"]

#: Bytes the ``-wal`` file is cut back to when SQLite starts it over (the first commit
#: after a checkpoint copied all of it). SQLite's default keeps the file at the largest
#: size it ever reached: under the ``load`` mix it grew to 45 MB in a minute (the
#: database was 10 MB), and a burst of 1 MiB bulks grows it further; a server would hold
#: that disk space until it closed.
WAL_SIZE_LIMIT = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class DriverInfo:
    """What the opened database can do."""

    module: str
    sqlite_version: str
    vec_version: str | None
    vec_error: str | None
    fts5: bool


DriverChoice = Literal["auto", "sqlean", "sqlite3"]


def _driver_module(choice: DriverChoice) -> ModuleType:
    """``sqlean`` when available (``auto``), or the module asked for."""
    if choice == "sqlite3":
        return importlib.import_module("sqlite3")
    try:
        return importlib.import_module("sqlean.dbapi2")
    except ImportError:
        if choice == "sqlean":
            raise
        logger.warning("sqlean is not installed; using the standard sqlite3 module")
        return importlib.import_module("sqlite3")


def _load_vec(dbapi_conn: Any) -> str | None:
    """Load sqlite-vec into one connection; return the error text when it cannot."""
    try:
        import sqlite_vec

        dbapi_conn.enable_load_extension(True)
        try:
            sqlite_vec.load(dbapi_conn)
        finally:
            dbapi_conn.enable_load_extension(False)
    except Exception as exc:  # any failure means: use the numpy fallback
        return f"{type(exc).__name__}: {exc}"
    return None


def open_engine(
    path: str | Path,
    *,
    want_vec: bool = True,
    driver: DriverChoice = "auto",
    readonly: bool = False,
    reader_threads: int | None = None,
) -> tuple[Engine, DriverInfo]:
    """Create the engine for ``path`` (a file or ``":memory:"``) and probe what it can do.

    The writing engine has one connection (``StaticPool``), used by the store's one writer
    thread: SQLite's single-writer rule and ``:memory:`` databases stay simple. A
    ``readonly`` engine (file databases only) gives each reader thread a connection of its
    own (``SingletonThreadPool``, ``PRAGMA query_only``): WAL lets them read in parallel.
    That pool closes arbitrary connections once more threads than its size have
    connected (connections other threads still use), so it is sized to the store's own
    ``reader_threads`` and used by them alone. Without ``reader_threads`` a read-only
    engine opens a connection per ``connect()`` and closes it with it (``NullPool``),
    for reads from callers' threads (an export).
    """
    module = _driver_module(driver)
    target = ":memory:" if str(path) == ":memory:" else str(Path(path).expanduser())
    pool: dict[str, Any] = {"poolclass": StaticPool}
    if readonly and reader_threads is not None:
        # The reader threads, plus this thread: the probe below connects from it.
        pool = {"poolclass": SingletonThreadPool, "pool_size": reader_threads + 1}
    elif readonly:
        pool = {"poolclass": NullPool}
    engine = create_engine(
        f"sqlite:///{target}",
        module=module,
        connect_args={"check_same_thread": False},
        **pool,
    )
    vec_error: list[str | None] = [None if want_vec else "not loaded: no vector index uses it"]

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        if want_vec:
            vec_error[0] = _load_vec(dbapi_conn)
        cursor = dbapi_conn.cursor()
        if readonly:
            cursor.execute("PRAGMA query_only=ON")
        elif target != ":memory:":
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=5000")
        cursor.close()

    if readonly:
        _snapshot_reads(engine)

    with engine.connect() as conn:
        raw = conn.connection.dbapi_connection
        assert raw is not None
        cur = raw.cursor()
        sqlite_version = cur.execute("select sqlite_version()").fetchone()[0]
        vec_version: str | None = None
        if vec_error[0] is None:
            vec_version = cur.execute("select vec_version()").fetchone()[0]
        try:
            cur.execute("create virtual table temp._fts5_probe using fts5(x)")
            cur.execute("drop table temp._fts5_probe")
            fts5 = True
        except Exception:
            fts5 = False
        cur.close()
    info = DriverInfo(
        module=module.__name__,
        sqlite_version=sqlite_version,
        vec_version=vec_version,
        vec_error=vec_error[0],
        fts5=fts5,
    )
    return engine, info


def _snapshot_reads(engine: Engine) -> None:
    """Make each SQLAlchemy transaction of a reader engine one SQLite read transaction.

    The DB-API driver issues ``BEGIN`` only before a write, so without this every
    ``SELECT`` of a read unit ran as a transaction of its own: two statements of one unit
    could see two states of the file (a row counted by one and gone from the next; an
    export's pages from different moments). With a deferred ``BEGIN`` the unit reads one
    snapshot, taken by its first ``SELECT``; the driver's ``commit()`` ends it (it asks
    SQLite whether a transaction is open, as for the writer's ``BEGIN IMMEDIATE``). It
    also starts one read transaction per unit instead of one per statement (each of which
    drops the connection's page cache after another connection's commit), but no CPU
    difference showed in a reader benchmark with a writer committing meanwhile: the point
    is the snapshot.
    """

    @event.listens_for(engine, "begin")
    def _begin(conn: Any) -> None:
        raw = conn.connection.dbapi_connection
        if not raw.in_transaction:
            raw.execute("BEGIN")
