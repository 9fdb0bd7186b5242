"""The API-key store and the memory engine share one file in one process, safely.

Two copies of SQLite in one process do not see each other's locks: a connection of the
other copy closing would checkpoint and delete the WAL the engine still writes, and what
the engine writes next is visible to no other process. The key store therefore opens
the file with the engine's library (``keystore._connect``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from backends.sqlite import SQLiteBackend
from nams_local.server.keystore import ApiKeyStore

_COUNT = (
    "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
    "print(c.execute('SELECT count(*) FROM entities').fetchone()[0])"
)


def _entities_seen_by_another_process(path: Path) -> int:
    done = subprocess.run(
        [sys.executable, "-c", _COUNT, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return int(done.stdout)


async def test_closing_the_key_store_loses_no_engine_write(tmp_path: Path) -> None:
    path = tmp_path / "both.db"
    backend = SQLiteBackend(path, embeddings=False, extraction="off")
    try:
        await backend.add_entity("Before", "thing")
        keys = ApiKeyStore(path)
        keys.close()  # the engine still has the file open
        await backend.add_entity("After", "thing")
        assert Path(f"{path}-wal").exists()
        assert _entities_seen_by_another_process(path) == 2
    finally:
        await backend.aclose()
    assert _entities_seen_by_another_process(path) == 2
