"""The ``-wal`` file is cut back after a burst, not kept at the largest size it reached.

SQLite restarts its write-ahead log from the top once a checkpoint has copied all of it,
but leaves the file as large as it ever grew unless ``journal_size_limit`` is set
(``driver.WAL_SIZE_LIMIT``). A server that once took a burst of big bulks would hold that
much disk until it closed. Checkpoints run after every commit here (``EVERY_COMMITS``),
so the test needs no waiting.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from backends.sqlite import SQLiteBackend, checkpoints, driver
from nams_local import NewMessage

LIMIT = 256 * 1024


async def _wal_after_a_burst(path: Path) -> tuple[int, int]:
    backend = SQLiteBackend(path, embeddings=False, extraction="off")
    try:
        conversation = await backend.create_conversation("u1")
        bulk = [NewMessage(role="user", content=f"word{i} " * 3000) for i in range(60)]
        await backend.add_messages(conversation.id, bulk)
        after_burst = os.path.getsize(f"{path}-wal")
        # Checkpointed after that commit; the next write starts the log over.
        await backend.add_message(conversation.id, "user", "a small one")
        return after_burst, os.path.getsize(f"{path}-wal")
    finally:
        await backend.aclose()


async def test_the_wal_is_cut_back_to_the_limit_after_a_burst(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpoints, "EVERY_COMMITS", 1)
    monkeypatch.setattr(driver, "WAL_SIZE_LIMIT", LIMIT)
    after_burst, after_next = await _wal_after_a_burst(tmp_path / "limited.sqlite3")
    assert after_burst > 4 * LIMIT
    assert after_next <= LIMIT


async def test_without_a_limit_sqlite_keeps_the_largest_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The test above can fail: SQLite's own default (-1) keeps the file large."""
    monkeypatch.setattr(checkpoints, "EVERY_COMMITS", 1)
    monkeypatch.setattr(driver, "WAL_SIZE_LIMIT", -1)
    after_burst, after_next = await _wal_after_a_burst(tmp_path / "unlimited.sqlite3")
    assert after_next >= after_burst > 4 * LIMIT
