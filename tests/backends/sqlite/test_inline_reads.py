"""Cheap reads run on the caller's thread; slow or blocked ones move to a reader thread.

``inline_reads.py``: a read first runs on the thread that asked for it, within a budget of
SQL time and without waiting for a lock; over the budget, or on a busy file, it runs
again on a reader thread and its kind goes there directly for a while. The event loop is
never held for longer than about the budget.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import sqlean.dbapi2 as sqlean  # the engine's library
from sqlalchemy import text

from backends.sqlite import SQLiteBackend
from backends.sqlite.inline_reads import reader_thread
from backends.sqlite.store import Ctx

#: A statement that runs far past any budget (about a second of SQLite work here).
SLOW_SQL = (
    "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r WHERE x < 3000000) "
    "SELECT count(*) FROM r"
)


@contextlib.asynccontextmanager
async def _backend(tmp_path: Path) -> AsyncIterator[SQLiteBackend]:
    backend = SQLiteBackend(tmp_path / "inline.sqlite3", embeddings=False, extraction="off")
    try:
        await backend.create_conversation("u1")
        yield backend
    finally:
        await backend.aclose()


def _recording(threads: list[str], sql: str) -> Callable[[Ctx], int]:
    def unit(ctx: Ctx) -> int:
        threads.append(threading.current_thread().name)
        return int(ctx.conn.execute(text(sql)).scalar_one())

    return unit


async def _read(backend: SQLiteBackend, fn: Callable[[Ctx], Any]) -> Any:
    return await backend.store.read(fn, Ctx(backend.store, backend.workspace))


async def test_a_cheap_read_runs_on_the_callers_thread(tmp_path: Path) -> None:
    async with _backend(tmp_path) as backend:
        threads: list[str] = []
        count = _recording(threads, "SELECT count(*) FROM conversations")
        assert await _read(backend, count) == 1
        assert threads == [threading.current_thread().name]
        assert backend.store.inline.answered >= 1

        backend.store.inline.budget = 0.0  # off: every read on a reader thread
        assert await _read(backend, count) == 1
        assert threads[-1].startswith("nams-sqlite-read")


async def test_a_marked_read_always_runs_on_a_reader_thread(tmp_path: Path) -> None:
    async with _backend(tmp_path) as backend:
        threads: list[str] = []
        assert await _read(backend, reader_thread(_recording(threads, "SELECT 1"))) == 1
        assert len(threads) == 1 and threads[0].startswith("nams-sqlite-read")


async def test_a_read_over_its_budget_moves_to_a_reader_thread_and_so_does_its_kind(
    tmp_path: Path,
) -> None:
    async with _backend(tmp_path) as backend:
        threads: list[str] = []
        slow = _recording(threads, SLOW_SQL)
        assert await _read(backend, slow) == 3000000
        here = threading.current_thread().name
        # Started here, cut off by the budget, run again (whole) on a reader thread.
        assert threads[0] == here and threads[1].startswith("nams-sqlite-read")
        assert len(threads) == 2
        assert backend.store.inline.handed_over == 1
        # The same function goes straight to a reader for the next calls.
        assert await _read(backend, slow) == 3000000
        assert len(threads) == 3 and threads[2].startswith("nams-sqlite-read")
        assert backend.store.inline.handed_over == 1


async def test_a_cut_off_read_moves_only_its_own_workspaces_calls(tmp_path: Path) -> None:
    """One tenant's heavy read sends that tenant's next calls of it to the reader
    threads, not another tenant's (the same function, another workspace)."""
    async with _backend(tmp_path) as backend:
        threads: list[str] = []

        def unit(ctx: Ctx, sql: str) -> int:
            threads.append(threading.current_thread().name)
            return int(ctx.conn.execute(text(sql)).scalar_one())

        heavy = Ctx(backend.store, "ws-heavy")
        other = Ctx(backend.store, "ws-other")
        assert await backend.store.read(unit, heavy, SLOW_SQL) == 3000000
        assert len(threads) == 2  # cut off, then run on a reader
        assert await backend.store.read(unit, heavy, "SELECT 1") == 1
        assert threads[-1].startswith("nams-sqlite-read")  # this tenant: to the readers
        assert await backend.store.read(unit, other, "SELECT 1") == 1
        assert threads[-1] == threading.current_thread().name  # the other: still inline


async def test_the_event_loop_keeps_running_while_slow_reads_run(tmp_path: Path) -> None:
    """Three distinct slow reads (each cut off once): the loop's longest pause stays near
    the budget, far below one read's run time (about a second)."""
    async with _backend(tmp_path) as backend:
        gaps: list[float] = []
        done = asyncio.Event()

        async def heartbeat() -> None:
            last = time.perf_counter()
            while not done.is_set():
                await asyncio.sleep(0.005)
                now = time.perf_counter()
                gaps.append(now - last)
                last = now

        beat = asyncio.create_task(heartbeat())
        started = time.perf_counter()
        kinds = [_recording([], SLOW_SQL) for _ in range(3)]
        results = await asyncio.gather(*(_read(backend, kind) for kind in kinds))
        took = time.perf_counter() - started
        done.set()
        await beat
        assert results == [3000000] * 3
        assert took > 0.3  # the reads were slow enough for the bound below to mean something
        assert max(gaps) < 0.15, f"the event loop stalled {max(gaps) * 1000:.0f} ms"


def test_each_thread_reads_on_its_own_connection_closed_when_it_ends(tmp_path: Path) -> None:
    """Reads from five short-lived threads (an application's own event loops): each had a
    connection of its own; once they ended, the next thread's first read closes theirs."""
    backend = SQLiteBackend(tmp_path / "threads.sqlite3", embeddings=False, extraction="off")
    try:

        def in_a_thread() -> None:
            async def go() -> None:
                await _read(backend, _recording([], "SELECT count(*) FROM conversations"))

            asyncio.run(go())

        for _ in range(5):
            worker = threading.Thread(target=in_a_thread)
            worker.start()
            worker.join()
        inline = backend.store.inline
        assert inline.answered == 5
        opened = dict(inline._conns)
        assert 1 <= len(opened) <= 5
        last = threading.Thread(target=in_a_thread)
        last.start()
        last.join()
        assert set(inline._conns) == {last.ident}  # the ended threads' were closed
        assert all(conn.closed for conn in opened.values())
    finally:
        asyncio.run(backend.aclose())
    assert inline._conns == {}


async def test_a_read_that_finds_a_file_busy_runs_again_on_a_reader_thread(
    tmp_path: Path,
) -> None:
    """SQLite's own ``SQLITE_BUSY`` (another connection holds an exclusive lock; the inline
    attempt never waits for one) hands the read to a reader thread, which runs it again
    once the lock is gone; unlike a cut-off it does not send the next calls there too."""
    locked = tmp_path / "locked.sqlite3"
    holder = sqlean.connect(locked, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("INSERT INTO t VALUES (7)")
    holder.execute("BEGIN EXCLUSIVE")  # a rollback-journal file: readers get SQLITE_BUSY
    threads: list[str] = []

    def unit(ctx: Ctx) -> int:
        threads.append(threading.current_thread().name)
        other = sqlean.connect(locked, timeout=0)
        try:
            return int(other.execute("SELECT x FROM t").fetchone()[0])
        except sqlean.OperationalError:
            if holder.in_transaction:
                holder.execute("ROLLBACK")  # let go once the read has found it busy
            raise
        finally:
            other.close()

    try:
        async with _backend(tmp_path) as backend:
            inline = backend.store.inline
            assert await _read(backend, unit) == 7
            here = threading.current_thread().name
            assert threads[0] == here and threads[1].startswith("nams-sqlite-read")
            assert len(threads) == 2
            assert inline.handed_over == 1
            assert await _read(backend, unit) == 7  # the lock is gone: inline again
            assert threads[2] == here and len(threads) == 3
    finally:
        holder.close()
