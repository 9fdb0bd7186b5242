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

Commit hooks (``after_commit``) let a unit of work publish in-memory consequences (the
vector lane's queue of rows to embed) only once its rows are durable; a rolled-back unit's
hooks are dropped.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlalchemy import Connection

from nams_local.errors import NamsError

__all__ = ["MAX_GROUP", "WriterLane"]

R = TypeVar("R")

log = logging.getLogger("nams_local.sqlite")

#: Units of work committed together at most (bounds the latency one group adds).
MAX_GROUP = 64


@dataclass(eq=False)
class _Job:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    future: Future[Any]
    #: ``True``: a unit of work run in a (group) transaction; ``False``: a raw call
    #: (connect, migrate, close) run alone, outside any transaction of the lane.
    unit: bool
    hooks: list[Callable[[], None]] = field(default_factory=list)


class WriterLane:
    """The single writer thread of a store (see the module docstring)."""

    def __init__(self, name: str, on_rollback: Callable[[BaseException], None]) -> None:
        #: Called after a transaction was rolled back because a unit raised (not for
        #: refused input that wrote nothing): in-memory mirrors patched by the undone
        #: units must be forgotten.
        self._on_rollback = on_rollback
        self._jobs: deque[_Job] = deque()
        self._cond = threading.Condition()
        self._stopping = False
        self._current: _Job | None = None
        self.conn: Connection | None = None
        #: The most units one commit has held so far, and the commits and units of work
        #: run so far (for benchmarks and tests).
        self.largest_group = 0
        self.commits = 0
        self.units = 0
        #: Groups rolled back and replayed member by member.
        self.replays = 0
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    # -- submitting --------------------------------------------------------------------
    def call(self, fn: Callable[..., R], *args: Any) -> Future[R]:
        """Run ``fn(*args)`` on the writer thread, outside the lane's transactions."""
        return self._put(_Job(fn, args, {}, Future(), unit=False))

    def unit(
        self, fn: Callable[..., R], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Future[R]:
        """Run the unit of work ``fn(*args, **kwargs)`` in a transaction (maybe grouped);
        the future resolves after its commit."""
        return self._put(_Job(fn, args, kwargs, Future(), unit=True))

    def _put(self, job: _Job) -> Future[Any]:
        with self._cond:
            if self._stopping:
                raise RuntimeError("the writer lane is stopped")
            self._jobs.append(job)
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
            return len(self._jobs)

    def on_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def stop(self) -> None:
        """Finish what is queued, then end the thread (idempotent)."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
        if threading.current_thread() is not self._thread:
            self._thread.join()

    # -- the thread ----------------------------------------------------------------------
    def _next(self) -> list[_Job] | None:
        with self._cond:
            while not self._jobs:
                if self._stopping:
                    return None
                self._cond.wait()
            first = self._jobs.popleft()
            batch = [first]
            if first.unit:
                while self._jobs and self._jobs[0].unit and len(batch) < MAX_GROUP:
                    batch.append(self._jobs.popleft())
            return batch

    def _loop(self) -> None:
        while True:
            batch = self._next()
            if batch is None:
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
            if len(batch) == 1:
                self._alone(batch[0])
            else:
                self._group(batch)

    def _alone(self, job: _Job) -> None:
        conn = self.conn
        assert conn is not None, "the writer lane has no connection yet"
        self._current = job
        try:
            with conn.begin():
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
            with conn.begin():
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
