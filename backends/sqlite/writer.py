"""The writer lane: one thread, one connection, queued units of work committed in groups.

SQLite has one writer at a time, and what a small write costs is mostly its commit (the
WAL append and its sync). So the writer thread does not commit each unit of work on its
own: it takes every unit waiting in its queue (up to ``MAX_GROUP``), runs them one after
another inside one transaction and commits once — *group commit*. Under one caller
nothing changes (a group of one is today's transaction); under many, the commits are
shared and throughput rises with concurrency instead of queueing.

A unit's future resolves only after the commit that holds it, so an acknowledged write is
on disk and every reader thread sees it (read-your-writes). Units stay independent. A unit
that refuses its input (a ``NamsError``: not found, invalid) has changed nothing — every
unit of work checks before it writes, the engine's rule — so it fails alone and the group
goes on. A unit that fails in any other way rolls the whole group back, and every member
then runs again alone in its own transaction: a failing unit fails only its own caller and
writes nothing, while the others commit as if they had never been grouped.

Two priorities and per-workspace fairness. A unit is submitted with a ``key`` (its
workspace) and a priority: *request* units (a caller is waiting for them) or
*background* units (queued extraction and summaries). A group holds units of one priority
only. Request units always go first, so a request write never waits behind queued
extraction -- at most behind the background group already running, which holds at most
``MAX_BACKGROUND_GROUP`` units (two: one extraction unit holds the writer for up to ~25 ms
of CPU, so grouping more saves a commit of about a millisecond and costs a waiting request
the rest). Background work is not starved either: when its oldest unit has waited
``BACKGROUND_MAX_WAIT`` seconds, one background *unit* runs between request groups, and
the next request group runs before any further background unit, however much of the
backlog has aged. (Groups of eight extraction units held the writer for up to 146 ms of
CPU under the adversarial load, and an aged backlog ran group after group while request
writes waited: ``writer_stats`` showed it.) Within a priority, a group is filled
round-robin over the keys (one unit of each waiting workspace in turn), so a tenant with a
thousand queued writes delays another tenant's single write by at most one group, not by
its whole bulk.

Units have a cost. What a unit holds the writer for is not the same for every unit: a
bulk of 100 long messages costs the writer as much as a few hundred single short writes.
So a unit is submitted with a ``cost`` (``text_cost``: one per item, plus one per
``COST_CHARS`` characters of text it writes) and a group is filled only up to a budget
(``GROUP_COST``, ``BACKGROUND_GROUP_COST``): a unit that does not fit waits for the next
group, which it then opens (the first unit of a group always fits, whatever its cost), so a
heavy unit runs in a group of its own instead of making the light units grouped with it
wait for it. A bulk stays one unit: the contract makes it all or nothing, and splitting it
into several transactions would show half a bulk to readers and leave half of one after a
crash; its cost is bounded by the bulk and body limits instead.

A workspace's queue is bounded: past ``MAX_QUEUED_UNITS`` request units or
``MAX_QUEUED_COST`` of cost waiting, ``blocker(key)`` names the workspace's oldest waiting
unit, and the store makes the next write of that workspace wait (on its event loop, not
in the writer's queue) until that unit is done — backpressure on the tenant that fills the
queue, nothing for the others, whose units keep their place in the round-robin.

Raw calls (connect, migrate, close) are barriers: they run once every unit queued before
them has run, and units queued after them wait for them.

Commit hooks (``after_commit``) let a unit of work publish in-memory consequences (the
vector lane's queue of rows to embed) only once its rows are durable; a rolled-back unit's
hooks are dropped.

Idle time is not wasted: once the lane has had nothing queued for ``fts_merges.IDLE_SECONDS``
since its last unit of work, it merges full-text segments one bounded step at a time
(``use_merges``, ``fts_merges.py``), each step its own short transaction, back to back
until FTS5 reports nothing left or a unit arrives; a unit queued meanwhile waits behind
one step at most.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeVar

from sqlalchemy import Connection

from nams_local.errors import NamsError

from .checkpoints import Checkpoints
from .fts_merges import IDLE_SECONDS, FtsMerges
from .write_lock import LockStats, WriterFileLock
from .writer_stats import GroupStats

__all__ = [
    "BACKGROUND_GROUP_COST",
    "BACKGROUND_MAX_WAIT",
    "COST_CHARS",
    "GROUP_COST",
    "MAX_BACKGROUND_GROUP",
    "MAX_GROUP",
    "MAX_QUEUED_COST",
    "MAX_QUEUED_UNITS",
    "WriterLane",
    "text_cost",
]

R = TypeVar("R")

log = logging.getLogger("nams_local.sqlite")

#: Units of work committed together at most (bounds the latency one group adds).
MAX_GROUP = 64
#: Background units committed together at most (what a request write may wait behind).
MAX_BACKGROUND_GROUP = 2
#: A background unit waits at most this long (seconds) while request units keep coming.
BACKGROUND_MAX_WAIT = 0.1
#: Characters of text that cost a unit as much as one more item (``text_cost``).
COST_CHARS = 4096
#: The cost one request group may hold (a heavier unit runs in a group of its own).
GROUP_COST = 96
#: The cost one background group may hold (what a request write may wait behind).
BACKGROUND_GROUP_COST = 24
#: Request units, and their cost, one workspace may have waiting before its next write
#: waits for room (``WriterLane.blocker``).
MAX_QUEUED_UNITS = 256
MAX_QUEUED_COST = 2048


#: What ``WriterLane._next`` returns when the lane is idle and segments are to be merged.
_MERGE: Final = "merge"


def text_cost(chars: int, items: int = 1) -> int:
    """The cost of a unit writing ``items`` rows with ``chars`` characters of text: about
    what it holds the writer for, in small single writes."""
    return max(1, items) + max(0, chars) // COST_CHARS


@dataclass(eq=False)
class _Job:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    future: Future[Any]
    #: ``True``: a unit of work run in a (group) transaction; ``False``: a raw call
    #: (connect, migrate, close) run alone, outside any transaction of the lane.
    unit: bool
    #: Its place in submission order (raw calls are barriers by it).
    seq: int = 0
    #: The workspace it belongs to (round-robin fairness within its priority).
    key: str = ""
    #: When it was queued (``time.monotonic``; background ageing).
    queued_at: float = 0.0
    #: What it holds the writer for, in small single writes (group budgets, queue caps).
    cost: int = 1
    #: A background unit (queued extraction and summaries), not a request's.
    background: bool = False
    hooks: list[Callable[[], None]] = field(default_factory=list)


class _FairQueue:
    """Units of one priority, a FIFO per key, served round-robin over the keys."""

    def __init__(self) -> None:
        self._by_key: dict[str, deque[_Job]] = {}
        self._cost: dict[str, int] = {}
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def push(self, job: _Job) -> None:
        self._by_key.setdefault(job.key, deque()).append(job)
        self._cost[job.key] = self._cost.get(job.key, 0) + job.cost
        self._size += 1

    def oldest(self) -> _Job | None:
        heads = [queue[0] for queue in self._by_key.values()]
        return min(heads, key=lambda job: job.seq) if heads else None

    def blocker(self, key: str, units: int, cost: int) -> _Job | None:
        """The key's oldest waiting unit when it has ``units`` or ``cost`` waiting."""
        queue = self._by_key.get(key)
        if queue and (len(queue) >= units or self._cost.get(key, 0) >= cost):
            return queue[0]
        return None

    def take(self, limit: int, before: int | None, budget: int) -> list[_Job]:
        """Up to ``limit`` units and ``budget`` cost, one per key in turn, only those
        queued ``before`` a seq. A head that does not fit is passed over and keeps its
        key's place at the front of the rotation, so it opens the next group."""
        taken: list[_Job] = []
        spent = 0
        while len(taken) < limit:
            progressed = False
            for key in list(self._by_key):
                queue = self._by_key[key]
                head = queue[0]
                if before is not None and head.seq > before:
                    continue
                if taken and spent + head.cost > budget:
                    continue
                taken.append(queue.popleft())
                spent += head.cost
                progressed = True
                self._cost[key] -= head.cost
                # The key goes to the back of the rotation (or away when drained).
                del self._by_key[key]
                if queue:
                    self._by_key[key] = queue
                else:
                    del self._cost[key]
                if len(taken) == limit:
                    break
            if not progressed:
                break
        self._size -= len(taken)
        return taken


class WriterLane:
    """The single writer thread of a store (see the module docstring)."""

    def __init__(
        self,
        name: str,
        on_rollback: Callable[[BaseException], None],
        burst: Callable[[], AbstractContextManager[None]] = nullcontext,
    ) -> None:
        #: Called after a transaction was rolled back because a unit raised (not for
        #: refused input that wrote nothing): in-memory mirrors patched by the undone
        #: units must be forgotten.
        self._on_rollback = on_rollback
        #: Wraps the resolving of a committed group's futures, so their waiters can be
        #: woken once for the group (``batched_wakeups.py``).
        self._burst = burst
        #: The cross-process turn-taking lock of a file database (``use_lock``).
        self._lock: WriterFileLock | None = None
        #: What taking the locks cost: the file lock's waits, ``BEGIN IMMEDIATE``'s time.
        self.lock_stats = LockStats()
        #: The lane's own WAL checkpoints, once it takes the writer lock (``use_lock``).
        self.checkpoints: Checkpoints | None = None
        #: Full-text segments merged in idle time (``use_merges``), if the store asks, and
        #: when the last unit of work ended (idle time counts from it).
        self.merges: FtsMerges | None = None
        self._last_unit = time.monotonic()
        self._requests = _FairQueue()
        self._background = _FairQueue()
        self._calls: deque[_Job] = deque()
        self._seq = itertools.count(1)
        self._cond = threading.Condition()
        self._stopping = False
        self._current: _Job | None = None
        #: An aged background unit ran while requests waited: requests go next.
        self._requests_owed = False
        self.conn: Connection | None = None
        #: The most units one commit has held so far, and the commits and units of work
        #: run so far (for benchmarks and tests).
        self.largest_group = 0
        self.commits = 0
        self.units = 0
        #: Groups rolled back and replayed member by member.
        self.replays = 0
        #: Each group's writer time and CPU, by priority and workspace (``writer_stats``).
        self.stats = GroupStats.from_environment()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    # -- submitting --------------------------------------------------------------------
    def call(self, fn: Callable[..., R], *args: Any) -> Future[R]:
        """Run ``fn(*args)`` on the writer thread, outside the lane's transactions."""
        return self._put(_Job(fn, args, {}, Future(), unit=False))

    def unit(
        self,
        fn: Callable[..., R],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        key: str = "",
        background: bool = False,
        cost: int = 1,
    ) -> Future[R]:
        """Run the unit of work ``fn(*args, **kwargs)`` in a transaction (maybe grouped);
        the future resolves after its commit. ``key``: its workspace (fairness);
        ``background``: it yields to request units; ``cost``: what it holds the writer
        for (``text_cost``; see the module docstring)."""
        job = _Job(
            fn, args, kwargs, Future(), unit=True, key=key, cost=max(1, cost), background=background
        )
        return self._put(job, self._background if background else self._requests)

    def blocker(self, key: str) -> Future[Any] | None:
        """``None`` while the workspace ``key`` has room in the request queue; else the
        future of its oldest waiting request unit (wait for it before queueing more)."""
        with self._cond:
            job = self._requests.blocker(key, MAX_QUEUED_UNITS, MAX_QUEUED_COST)
            return None if job is None else job.future

    def _put(self, job: _Job, queue: _FairQueue | None = None) -> Future[Any]:
        with self._cond:
            if self._stopping:
                raise RuntimeError("the writer lane is stopped")
            job.seq = next(self._seq)
            job.queued_at = time.monotonic()
            if queue is None:
                self._calls.append(job)
            else:
                queue.push(job)
            self._cond.notify()
        return job.future

    def after_commit(self, hook: Callable[[], None]) -> None:
        """Run ``hook`` on the writer thread once the running unit's transaction commits
        (never if it rolls back). Only callable from inside a unit of work."""
        if self._current is None or threading.current_thread() is not self._thread:
            raise RuntimeError("after_commit is only for a unit of work on the writer thread")
        self._current.hooks.append(hook)

    @property
    def queued(self) -> int:
        """Jobs waiting for the writer thread."""
        with self._cond:
            return len(self._requests) + len(self._background) + len(self._calls)

    @property
    def queued_background(self) -> int:
        """Background units waiting for the writer thread."""
        with self._cond:
            return len(self._background)

    def on_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def stop(self) -> None:
        """Finish what is queued, then end the thread (idempotent)."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
        if threading.current_thread() is not self._thread:
            self._thread.join()
            if self._lock is not None:
                self._lock.close()

    def use_lock(self, lock: WriterFileLock | None) -> None:
        """Take ``lock`` around every transaction from now on, and run the WAL checkpoints
        after releasing it (``checkpoints.py``). On the writer thread, once ``conn`` is
        set, before the first transaction; the lane closes the lock when it stops."""
        self._lock = lock
        if lock is not None:
            assert self.conn is not None, "the writer lane has no connection yet"
            self.lock_stats = lock.stats
            self.checkpoints = Checkpoints()
            self.checkpoints.take_over(self.conn.connection.dbapi_connection)

    def close_connection(self) -> None:
        """Close the lane's connection (the store's close, on the writer thread): no idle
        merge step runs after it, since one would take the file's writer lock and then find
        the connection closed."""
        self.merges = None
        conn, self.conn = self.conn, None
        if conn is not None:
            conn.close()

    def use_merges(self, merges: FtsMerges | None) -> None:
        """Merge full-text segments whenever the lane is idle (``fts_merges.py``); on the
        writer thread, after the schema exists."""
        self.merges = merges

    @contextmanager
    def transaction(self, conn: Connection) -> Iterator[None]:
        """One write transaction on the writer's connection: the file's writer lock first
        (``write_lock.py``; the kernel wakes us when another process's writer is done),
        then ``BEGIN IMMEDIATE`` (the engine's begin hook, ``freshness.guard_writer``),
        then COMMIT, or ROLLBACK on error, and only then the lock is released."""
        lock = self._lock
        held = lock is not None and lock.acquire()
        try:
            started = time.perf_counter()
            with conn.begin():
                self.lock_stats.began(time.perf_counter() - started)
                yield
        finally:
            if held:
                assert lock is not None
                lock.release()
        if self.checkpoints is not None:  # committed, and the next writer may go
            self.checkpoints.committed(conn.connection.dbapi_connection)

    # -- the thread ----------------------------------------------------------------------
    def _next(self) -> list[_Job] | Literal["merge"] | None:
        with self._cond:
            while not (self._requests or self._background or self._calls):
                if self._stopping:
                    return None
                if self.merges is None or not self.merges.pending:
                    self._cond.wait()
                    continue
                idle_for = time.monotonic() - self._last_unit
                if idle_for < IDLE_SECONDS:  # then look at the queue again
                    self._cond.wait(IDLE_SECONDS - idle_for)
                    continue
                return _MERGE  # idle since the last unit: one merge step (and the next)
            barrier = self._calls[0].seq if self._calls else None
            background_head = self._background.oldest()
            if background_head is not None and (barrier is None or background_head.seq < barrier):
                aged = time.monotonic() - background_head.queued_at >= BACKGROUND_MAX_WAIT
            else:
                background_head, aged = None, False
            if not aged or self._requests_owed:
                self._requests_owed = False
                requests = self._requests.take(MAX_GROUP, barrier, GROUP_COST)
                if requests:
                    return requests
            if background_head is not None:
                if self._requests:
                    # Requests wait: one aged unit, then their turn (module docstring).
                    self._requests_owed = True
                    return self._background.take(1, barrier, BACKGROUND_GROUP_COST)
                return self._background.take(MAX_BACKGROUND_GROUP, barrier, BACKGROUND_GROUP_COST)
            # Nothing queued before the barrier is left: the raw call runs now.
            return [self._calls.popleft()]

    def _loop(self) -> None:
        while True:
            batch = self._next()
            if isinstance(batch, str):  # _MERGE
                self._merge_step()
                continue
            if batch is None:
                self.stats.note(
                    {
                        "end": True,
                        "commits": self.commits,
                        "units": self.units,
                        "process_cpu": time.process_time(),
                        **self.lock_stats.as_dict(),
                        **(self.checkpoints.as_dict() if self.checkpoints else {}),
                        **(self.merges.as_dict() if self.merges else {}),
                    }
                )
                self.stats.close()
                return
            batch = [job for job in batch if job.future.set_running_or_notify_cancel()]
            if not batch:
                continue
            if not batch[0].unit:
                job = batch[0]
                try:
                    job.future.set_result(job.fn(*job.args, **job.kwargs))
                except BaseException as error:
                    job.future.set_exception(error)
                continue
            self.largest_group = max(self.largest_group, len(batch))
            self.commits += 1
            self.units += len(batch)
            started, cpu = time.perf_counter(), time.thread_time()
            if self.merges is not None:  # before any future resolves: its writer sees it
                self.merges.writing()
            if len(batch) == 1:
                self._alone(batch[0])
            else:
                self._group(batch)
            self._last_unit = time.monotonic()
            self.stats.record(
                batch[0].background,
                [job.key for job in batch],
                [job.cost for job in batch],
                time.perf_counter() - started,
                time.thread_time() - cpu,
            )

    def _merge_step(self) -> None:
        """One bounded merge of full-text segments in a transaction of its own; housekeeping,
        so a failure is a warning and merging waits for the next commit."""
        conn, merges = self.conn, self.merges
        if conn is None or merges is None:
            return
        try:
            with self.transaction(conn):
                merges.step(conn.connection.dbapi_connection)
        except Exception as error:
            merges.forget()
            log.warning("merging full-text segments failed: %r", error)

    def _alone(self, job: _Job) -> None:
        conn = self.conn
        assert conn is not None, "the writer lane has no connection yet"
        self._current = job
        try:
            with self.transaction(conn):
                result = job.fn(*job.args, **job.kwargs)
        except BaseException as error:
            job.hooks.clear()
            self._rolled_back(error)
            job.future.set_exception(error)
            return
        finally:
            self._current = None
        self._publish(job)
        job.future.set_result(result)

    def _group(self, batch: list[_Job]) -> None:
        conn = self.conn
        assert conn is not None, "the writer lane has no connection yet"
        outcomes: list[tuple[bool, Any]] = []
        try:
            with self.transaction(conn):
                for job in batch:
                    self._current = job
                    try:
                        outcomes.append((True, job.fn(*job.args, **job.kwargs)))
                    except NamsError as refused:
                        # Refused input: every unit checks before it changes anything
                        # (the engine's rule), so it fails alone and the group goes on.
                        job.hooks.clear()
                        outcomes.append((False, refused))
        except BaseException as error:
            # Members that ran before the failing one patched in-memory state the
            # rollback undid: forget it, then run each member alone.
            self._on_rollback(error)
            self.replays += 1
            for job in batch:
                job.hooks.clear()
                self._alone(job)
            return
        finally:
            self._current = None
        with self._burst():
            for job, (ok, value) in zip(batch, outcomes, strict=True):
                if ok:
                    self._publish(job)
                    job.future.set_result(value)
                else:
                    job.future.set_exception(value)

    def _publish(self, job: _Job) -> None:
        for hook in job.hooks:
            try:
                hook()
            except Exception as error:  # a hook must never un-acknowledge a commit
                log.warning("a commit hook failed: %r", error)
        job.hooks.clear()

    def _rolled_back(self, error: BaseException) -> None:
        if not isinstance(error, NamsError):  # refused input changed nothing
            self._on_rollback(error)
