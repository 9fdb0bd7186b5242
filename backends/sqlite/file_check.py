"""Checks that a database file is usable before and while the engine works on it.

A truncated file, a garbage header or a text file used to fail deep inside SQLAlchemy
with a 123-line traceback; 64 KB of garbage in the middle of a file opened silently and
answered 500 on the first search (issue 15, item 5). ``check_before_open`` reads only the
100-byte header (instant at any size), ``check_after_open`` runs ``PRAGMA quick_check`` on
files up to ``QUICK_CHECK_MAX_BYTES`` (bounded in time; bigger files get a schema read,
which still finds a damaged header page), and ``damage`` recognises SQLite's corruption
errors later so the store can raise ``DatabaseFileError`` (a 503) instead of a 500.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from nams_local.errors import DatabaseFileError

__all__ = [
    "QUICK_CHECK_MAX_BYTES",
    "check_after_open",
    "check_before_open",
    "damage",
    "opening_failed",
]

#: Files up to this size get a full ``PRAGMA quick_check`` on open (about a second on a
#: busy machine at this size); bigger ones only the header and schema checks.
QUICK_CHECK_MAX_BYTES = 64 * 1024 * 1024
_MAGIC = b"SQLite format 3\x00"
_HEADER_BYTES = 100
#: Messages of SQLite errors that mean the file is damaged or not a database.
_DAMAGE = (
    "malformed",
    "not a database",
    "disk image",
    "database corruption",
    "vtable constructor failed",  # a damaged full-text index
)


def check_before_open(path: str | Path) -> None:
    """Refuse a path whose directory is missing, or a file that is not an SQLite database
    or is shorter than its header says (``DatabaseFileError`` naming the path)."""
    if str(path) == ":memory:":
        return
    file = Path(path).expanduser()
    if file.is_dir():
        raise DatabaseFileError(f"{file}: is a directory, not a database file")
    if not file.parent.is_dir():
        raise DatabaseFileError(f"{file}: the directory {file.parent} does not exist")
    if not file.exists():
        if not os.access(file.parent, os.W_OK):
            raise DatabaseFileError(f"{file}: the directory {file.parent} is not writable")
        return
    size = file.stat().st_size
    if size == 0:
        return  # an empty file is a new database, as SQLite treats it
    try:
        with file.open("rb") as handle:
            header = handle.read(_HEADER_BYTES)
    except OSError as exc:
        raise DatabaseFileError(f"{file}: cannot be read ({exc.strerror})") from None
    if not header.startswith(_MAGIC):
        raise DatabaseFileError(f"{file}: is not an SQLite database (no SQLite header)")
    if len(header) < _HEADER_BYTES:
        raise DatabaseFileError(f"{file}: is truncated ({size} bytes, shorter than its header)")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    # The in-header page count is valid only when the two change counters agree.
    valid = header[24:28] == header[92:96] and pages > 0
    if valid and size < pages * page_size:
        raise DatabaseFileError(
            f"{file}: is truncated ({size} bytes; its header says {pages * page_size})"
        )


def check_after_open(dbapi_conn: Any, path: str) -> None:
    """On the freshly opened connection: read the schema and, for files up to
    ``QUICK_CHECK_MAX_BYTES``, run ``PRAGMA quick_check``."""
    if path == ":memory:":
        return
    try:
        dbapi_conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        size = Path(path).expanduser().stat().st_size
        if size <= QUICK_CHECK_MAX_BYTES:
            rows = dbapi_conn.execute("PRAGMA quick_check(3)").fetchall()
            problems = [" ".join(str(row[0]).split()) for row in rows if row[0] != "ok"]
            if problems:
                raise DatabaseFileError(f"{path}: is damaged ({'; '.join(problems)})")
    except Exception as exc:
        if not _is_database_error(exc):
            raise
        detail = " ".join(str(exc).split())
        raise DatabaseFileError(f"{path}: is damaged or not a database ({detail})") from None


def _is_database_error(exc: BaseException) -> bool:
    """A DB-API ``DatabaseError`` of either driver (``sqlite3`` or ``sqlean``: unrelated
    classes of the same name)."""
    return any(cls.__name__ == "DatabaseError" for cls in type(exc).__mro__)


def damage(exc: BaseException, path: str) -> DatabaseFileError | None:
    """The ``DatabaseFileError`` that ``exc`` (a driver or SQLAlchemy error) means, if it
    says the file is damaged; else ``None``."""
    cause = getattr(exc, "orig", None) or exc
    if not _is_database_error(cause):
        return None
    text = " ".join(str(cause).split())
    if not any(marker in text.lower() for marker in _DAMAGE):
        return None
    return DatabaseFileError(
        f"the database {path} is damaged ({text}); restore it from a backup "
        "(sqlite3 .recover can save what is readable)"
    )


def opening_failed(exc: BaseException, path: str) -> DatabaseFileError | None:
    """The one-line error for a driver error while opening ``path`` (``None`` for any
    other kind of failure, which is a bug to show in full)."""
    cause = getattr(exc, "orig", None) or exc
    if not _is_database_error(cause) and not isinstance(cause, OSError):
        return None
    detail = " ".join(str(cause).split())
    return damage(exc, path) or DatabaseFileError(f"{path}: cannot be opened ({detail})")
