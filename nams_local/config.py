"""Configuration from the environment: where the local engine keeps its database.

``NAMS_LOCAL_DB`` names the SQLite file (``:memory:`` allowed); without it the engine uses
``memory.db`` in the user's data directory, so a script run twice remembers.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import platformdirs

__all__ = ["DEFAULT_DB_NAME", "default_db_path", "open_local_backend"]

DEFAULT_DB_NAME = "memory.db"


def default_db_path() -> str:
    """``$NAMS_LOCAL_DB``, else ``<user data dir>/nams-local/memory.db`` (directory created)."""
    configured = os.environ.get("NAMS_LOCAL_DB")
    if configured:
        return configured
    folder = Path(platformdirs.user_data_dir("nams-local", appauthor=False))
    folder.mkdir(parents=True, exist_ok=True)
    return str(folder / DEFAULT_DB_NAME)


def open_local_backend(path: str | Path | None = None, **options: Any) -> Any:
    """Open the local SQLite engine at ``path`` (default ``default_db_path()``).

    Imported lazily so that ``nams_local`` itself never pulls in the engine's dependencies.
    """
    from backends.sqlite import SQLiteBackend

    return SQLiteBackend(path if path is not None else default_db_path(), **options)
