"""Cheap reads run on the caller's own thread; the rest still go to the reader threads.

Why: a read handed to a reader thread crosses threads twice (the submit, and the
result's wake-up of the event loop), and on each crossing the thread that wakes must get
the GIL back from whichever thread holds it. Under a server's load those waits, not
SQLite, were most of a read: ``gil_load`` in ``serve`` under the ``load`` mix showed the
GIL held ~60 % of the time while some thread waited for it ~95 % of the time (hand-over
latency), with the event loop itself waiting ~35 %. Running the read where it was asked
for removes both crossings: in four alternating pairs of 15 s ``load --no-embeddings``
runs against the code before it, 18-30 % more requests/s (494 against 398 on average, in
a busy hour of the machine) and 2.31 against 2.63 ms of server CPU per request.

A read on the event loop's thread must never stall it, so each one has a budget of CPU
time (``BUDGET_SECONDS`` of the thread's CPU clock): a progress handler looks at the
clock every ``PROGRESS_OPS`` SQLite instructions and interrupts the statement once the
read is past it. CPU time, not wall time: the handler is Python, so it needs the GIL,
and a read's wall time on a busy server is mostly waits for the GIL between its
statements. A first version with a 2 ms wall-clock budget, looked at every 1,000
instructions, cut off 79 of 3,559 reads tried inline in a 15 s run, and each cut sent
its kind to the reader threads for the next 32 calls: two reads in five still went
there, and no gain showed (with CPU time: 10 cut off, 7,340 answered inline). Nor a
count of instructions alone: SQLite counts them per prepared statement over all its
runs, and the driver caches statements, so a cheap query crossed any count now and
then. The connection never waits for a lock (``busy_timeout`` 0).

A read that is cut off, or finds the file busy, is run again on a reader thread (a read
changes nothing, so running it twice is safe) and that kind of read (its function, in
that workspace: one tenant's heavy reads never move another's) goes straight to the
reader threads for the next ``SKIP_AFTER_CUT`` calls, so a read that is
always over budget wastes at most one budget in that many. Its Python work (building
the answer) counts toward the budget, but only a statement can be stopped; every read
unit is bounded by its limits.
A read that must not run on the caller's thread (it waits for something, or is meant to
run beside another one) is marked ``@reader_thread``.

Each thread that reads gets a connection of its own from the store's read-only
``NullPool`` engine, the one exports use (never the reader threads' per-thread pool: its
clean-up closes connections other threads use), kept while the thread lives and closed
with the store.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine

from nams_local.errors import BackendUnavailableError

from .dbapi import raw_connection

__all__ = ["BUDGET_SECONDS", "PROGRESS_OPS", "SKIP_AFTER_CUT", "InlineReads", "reader_thread"]

R = TypeVar("R")
F = TypeVar("F", bound=Callable[..., Any])

#: Seconds of the thread's CPU an inline read may use before it moves to a reader thread.
BUDGET_SECONDS = 0.002
#: SQLite instructions between two looks at the clock (~0.3-0.6 ms of SQLite's work
#: here; a cheap read's statement looks once in many runs).
PROGRESS_OPS = 5000
#: Calls of a read function sent straight to the reader threads after one was cut off.
SKIP_AFTER_CUT = 32

#: SQLite result codes that hand a read over: interrupted (our budget), busy, locked.
_HAND_OVER = frozenset({9, 5, 6})


def reader_thread(fn: F) -> F:
    """Mark a read that must run on a reader thread: one that waits for something (a
    turn's job waits for the query vector) or is meant to run beside another read."""
    fn.__dict__[_READER_THREAD] = True
    return fn


_READER_THREAD = "_nams_reader_thread"


class _Local(threading.local):
    conn: Connection | None = None
    deadline: float = 0.0


class InlineReads:
    """The inline attempt of ``SQLiteStore.read``; ``attempt`` says whether it answered.

    Args:
        engine: the store's read-only ``NullPool`` engine (opened by the first call).
        budget: seconds of the thread's CPU an inline read may use (``0``: never inline).
    """

    def __init__(self, engine: Callable[[], Engine], budget: float = BUDGET_SECONDS) -> None:
        self.budget = budget
        self._engine = engine
        self._local = _Local()
        self._lock = threading.Lock()
        #: thread ident → its connection, so ``close`` can close every one.
        self._conns: dict[int, Connection] = {}
        #: (read function, workspace) → calls still to send to the reader threads; only
        #: entries still counting down are kept.
        self._skips: dict[tuple[str, str, str], int] = {}
        self._closed = False
        #: Reads answered inline, and reads handed over (cut off or busy).
        self.answered = 0
        self.handed_over = 0

    def attempt(
        self, fn: Callable[..., R], ctx: Any, args: tuple[object, ...], kwargs: dict[str, object]
    ) -> tuple[bool, R | None]:
        """``(True, fn(ctx with this thread's connection, ...))``, or ``(False, None)``
        when the read is to run on a reader thread instead."""
        if self.budget <= 0 or getattr(fn, _READER_THREAD, False):
            return False, None
        key = (
            getattr(fn, "__module__", ""),
            getattr(fn, "__qualname__", ""),
            getattr(ctx, "workspace", ""),
        )
        skip = self._skips.pop(key, 0)
        if skip:
            if skip > 1:
                self._skips[key] = skip - 1
            return False, None
        local = self._local
        conn = local.conn if local.conn is not None else self._connect()
        local.deadline = time.thread_time() + self.budget
        try:
            with conn.begin():
                result = fn(dataclasses.replace(ctx, connection=conn), *args, **kwargs)
        except Exception as exc:
            code = getattr(getattr(exc, "orig", None) or exc, "sqlite_errorcode", None)
            if self._closed:
                raise BackendUnavailableError("the SQLite store is closed") from exc
            if code not in _HAND_OVER:
                raise
            if code == 9:
                self._skips[key] = SKIP_AFTER_CUT
            self.handed_over += 1
            return False, None
        self.answered += 1
        return True, result

    def _connect(self) -> Connection:
        with self._lock:
            if self._closed:
                raise BackendUnavailableError("the SQLite store is closed")
            alive = {thread.ident for thread in threading.enumerate()}
            for ident in [ident for ident in self._conns if ident not in alive]:
                self._conns.pop(ident).close()  # its thread has ended
            stale = self._conns.pop(threading.get_ident(), None)
            if stale is not None:  # an ended thread's, whose ident this thread reuses
                stale.close()
            conn = self._engine().connect()
            local = self._local
            raw = raw_connection(conn)
            raw.execute("PRAGMA busy_timeout=0")
            raw.set_progress_handler(lambda: time.thread_time() > local.deadline, PROGRESS_OPS)
            local.conn = self._conns[threading.get_ident()] = conn
            return conn

    def close(self) -> None:
        """Close every thread's connection (no read may be running; the engine is the
        store's to dispose of)."""
        with self._lock:
            self._closed = True
            conns, self._conns = list(self._conns.values()), {}
            for conn in conns:
                conn.close()
