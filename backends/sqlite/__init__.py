"""The local engine: SQLite + FTS5 + sqlite-vec + a networkx entity graph.

The names are loaded on first use, so a module of this package that needs little (a
Cypher worker process imports only ``cypher_worker``) does not pull in the whole engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .backend import SQLiteBackend
    from .driver import DriverInfo

__all__ = ["DriverInfo", "SQLiteBackend"]


def __getattr__(name: str) -> Any:
    if name == "SQLiteBackend":
        from .backend import SQLiteBackend

        return SQLiteBackend
    if name == "DriverInfo":
        from .driver import DriverInfo

        return DriverInfo
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
