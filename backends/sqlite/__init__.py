"""The local engine: SQLite + FTS5 + sqlite-vec + a networkx entity graph."""

from .backend import SQLiteBackend
from .driver import DriverInfo

__all__ = ["DriverInfo", "SQLiteBackend"]
