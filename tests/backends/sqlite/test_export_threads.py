"""Exports from many threads, or many reader threads, never close a reader's connection.

The reader engine keeps one connection per thread (SQLAlchemy's ``SingletonThreadPool``),
which closes arbitrary connections once more threads than its ``pool_size`` (five) have
connected. An application exporting from its own thread pool (a web framework runs sync
handlers on dozens of threads) would so close the connections the store's reader threads
keep and reuse, and every later read of those threads failed ("Cannot operate on a closed
database"). Exports read on a connection of their own instead (``store.snapshot``).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from backends.sqlite import SQLiteBackend
from backends.sqlite import store as store_module
from nams_local import NewMessage

THREADS = 12


async def test_exports_from_many_threads_leave_the_readers_working(tmp_path: Path) -> None:
    backend = SQLiteBackend(tmp_path / "many.sqlite3", embeddings=False, extraction="off")
    try:
        conversation = await backend.create_conversation("u1")
        await backend.add_messages(
            conversation.id, [NewMessage(role="user", content=f"note {i}") for i in range(5)]
        )
        # Every reader thread has its connection before the exports start.
        for _ in range(8):
            assert len(await backend.list_messages(conversation.id)) == 5
        errors: list[BaseException] = []
        counts: list[int] = []

        def export() -> None:
            try:
                counts.append(sum(1 for _ in backend.export_records()))
            except BaseException as error:  # reported below
                errors.append(error)

        threads = [threading.Thread(target=export) for _ in range(THREADS)]
        for thread in threads:
            thread.start()
            thread.join()  # one after another: each a new thread connecting
        assert not errors
        assert len(set(counts)) == 1 and counts[0] > 5
        for _ in range(8):
            assert len(await backend.list_messages(conversation.id)) == 5
    finally:
        await backend.aclose()


async def test_every_reader_thread_keeps_its_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The readers' pool is sized to the store's reader threads: with more of them than
    SQLAlchemy's default of five, its clean-up closed connections reader threads still
    used (a 500 on ``serve`` for every read those threads ran next)."""
    monkeypatch.setattr(store_module, "READER_THREADS", 8)
    backend = SQLiteBackend(tmp_path / "readers.sqlite3", embeddings=False, extraction="off")
    try:
        conversation = await backend.create_conversation("u1")
        together = threading.Barrier(8, timeout=30)

        def count(raw: Any) -> int:
            together.wait()  # all eight threads connected at once
            return int(raw.execute("SELECT count(*) FROM conversations").fetchone()[0])

        for _ in range(2):  # the second round runs on connections the first one made
            jobs = [backend.store._read_later(count) for _ in range(8)]
            assert [job.result(timeout=30) for job in jobs if job is not None] == [1] * 8
        assert len(await backend.list_messages(conversation.id)) == 0
    finally:
        await backend.aclose()
