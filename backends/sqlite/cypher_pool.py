"""Cypher in worker processes that can be killed: the time, memory and row limits.

A Cypher query can ask for a cartesian product of every node with every node: it would
grow a server by gigabytes in seconds, and nothing can stop native code or a Python function
running on a thread from outside. So queries run in a small pool of worker processes:

* **time**: the parent waits ``timeout`` seconds for the answer, then kills the worker
  (SIGKILL) and answers ``LimitExceededError`` (400) naming the limit;
* **memory**: each worker caps its own address space (``RLIMIT_AS``) at what it had when it
  started plus ``memory_mb``; a query past it gets ``MemoryError`` inside the worker, which
  answers the memory limit and then exits (a fresh worker replaces it);
* **rows**: an answer of more than ``max_rows`` rows is refused in the worker, before it is
  sent back;
* **cancellation**: when the awaiting task is cancelled (the HTTP client went away, see
  ``routes/query.py``) the worker is killed at once, so its CPU stops with the request.

Workers are forked from a ``forkserver`` that has imported ``cypher_worker`` (and so the
interpreter) once, so a replacement costs a fork, not an interpreter start. A worker keeps
the graph it last built, by workspace and graph version (``cypher_generations.py``); the
parent sends a job the workspace's projection as plain rows (``cypher.Projection``) only when
the worker it took has another cached, so an unchanged workspace is neither read, sent nor
built again, and neither the interpreter nor the graph build holds the server's GIL. Idle
workers are reused for the next job.

The interpreter (kglite) stops a query at the time limit itself, and the worker survives
with its graph; the parent still kills a worker that has not answered a moment later.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import signal
import threading
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing import spawn as mp_spawn
from typing import Any

from nams_local.errors import BackendUnavailableError, InvalidInputError, LimitExceededError
from nams_local.models import QueryResult

from . import cypher_worker
from .cypher_run import Projection
from .cypher_text import Statement

#: Seconds the parent waits past the time limit before it kills a worker: the engine
#: stops a query at the limit itself (``("deadline",)``), keeping the worker and its
#: cached graph; the kill is for what the engine's deadline does not cover.
_KILL_GRACE = 1.0

#: Reads the workspace's projection and the graph version it is of.
Loader = Callable[[], Awaitable[tuple[int, Projection]]]

__all__ = ["DEFAULT_CYPHER_TIMEOUT", "CypherLimits", "CypherPool"]

#: Seconds a query may run (``nams-local serve --cypher-timeout``).
DEFAULT_CYPHER_TIMEOUT = 5.0

_MB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class CypherLimits:
    """The bounds of Cypher on one store (shared by all its workspaces)."""

    #: Seconds a query may run in its worker.
    timeout: float = DEFAULT_CYPHER_TIMEOUT
    #: Address space (MB) a query may add to its worker beyond what the worker started with.
    memory_mb: int = 512
    #: Rows an answer may have (after SKIP/LIMIT); more is refused: add a LIMIT.
    max_rows: int = 10_000
    #: Worker processes, i.e. queries running at once on the whole store.
    workers: int = 2
    #: Queries one workspace may run at once (below ``workers``: others always get one).
    per_workspace: int = 1
    #: Queries of one workspace that may wait for a worker; more are refused with 429.
    queue: int = 4
    #: Start the workers in the background when the store opens, so the first query does
    #: not wait for them (``nams-local serve`` does); otherwise on first use.
    prestart: bool = False

    def __post_init__(self) -> None:
        if not 0 < self.timeout <= 3600:
            raise InvalidInputError("cypher timeout must be > 0 and <= 3600 seconds")
        if self.memory_mb < 16:
            raise InvalidInputError("cypher memory_mb must be >= 16")
        if self.max_rows < 1 or self.workers < 1 or self.queue < 0:
            raise InvalidInputError("cypher max_rows and workers must be >= 1, queue >= 0")
        if not 1 <= self.per_workspace <= self.workers:
            raise InvalidInputError("cypher per_workspace must be from 1 to workers")


# -- the parent's side -----------------------------------------------------------------
def _context() -> Any:
    """The forkserver context, preloading this module so forks start warm."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([cypher_worker.__name__])
    return context


_STARTING = threading.Lock()


@contextlib.contextmanager
def _without_main() -> Iterator[None]:
    """Start a worker without re-running the caller's main module in it.

    multiprocessing makes every child import ``__main__`` (to find functions defined
    there); a script that queries at top level, without the ``if __name__ ==
    "__main__"`` idiom, would then run again in each worker. The worker's target lives in
    this module, so the preparation data's main-module entries are dropped, only while one
    of these workers starts (under a lock)."""
    original = mp_spawn.get_preparation_data

    def prepared(name: str) -> dict[str, Any]:
        data: dict[str, Any] = original(name)
        data.pop("init_main_from_path", None)
        data.pop("init_main_from_name", None)
        return data

    with _STARTING:
        mp_spawn.get_preparation_data = prepared
        try:
            yield
        finally:
            mp_spawn.get_preparation_data = original


def _lower_priority(pid: int) -> None:
    """Give the worker ``pid`` the server's nice value plus ``NICENESS``.

    Set here, before the first job is sent, not by the worker itself: a forkserver child
    inherits the fork server's priority, not the server's, and a worker that reniced itself
    could be handed its first job before it got that far."""
    target = min(19, os.getpriority(os.PRIO_PROCESS, 0) + cypher_worker.NICENESS)
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, pid, target)


class _Worker:
    """One worker process and the parent's end of its pipe."""

    def __init__(self, memory_bytes: int) -> None:
        parent, child = multiprocessing.Pipe(duplex=True)
        self.conn = parent
        self.process: Any = _context().Process(
            target=cypher_worker.serve,
            args=(child, memory_bytes),
            daemon=True,
            name="nams-cypher-worker",
        )
        with _without_main():
            self.process.start()
        _lower_priority(self.pid)
        child.close()  # so the parent sees EOF when the worker dies
        self.killed = False
        #: A job has been sent and its answer not yet received.
        self.in_flight = False
        #: The key of the graph the worker has cached (``cypher_worker._Cache``).
        self.cached: cypher_worker.Key | None = None

    @property
    def pid(self) -> int:
        pid: int = self.process.pid
        return pid

    @property
    def alive(self) -> bool:
        return not self.killed and self.process.is_alive()

    def kill(self) -> None:
        """SIGKILL, from any thread; the thread waiting in ``call`` then sees EOF."""
        self.killed = True
        with contextlib.suppress(OSError, ValueError):
            self.process.kill()

    def call(self, job: cypher_worker.Job, timeout: float) -> tuple[Any, ...]:
        """Send ``job`` and wait up to ``timeout`` s (on a pool thread, never the loop)."""
        self.in_flight = True
        try:
            self.cached = None  # unknown until the answer says the worker is alive
            self.conn.send(job)
            if not self.conn.poll(timeout + _KILL_GRACE):
                self.kill()
                return ("timeout",)
            reply: tuple[Any, ...] = self.conn.recv()
        except (EOFError, OSError):
            reply = ("memory",) if self._aborted() else ("died",)
        finally:
            self.in_flight = False
        if reply[0] in ("memory", "died", "timeout") or self.killed:
            self.close()
        elif reply[0] != "stale":
            self.cached = job[1]
        return reply

    def _aborted(self) -> bool:
        """Whether the worker died of ``SIGABRT``: kglite's allocator failing at the
        address-space cap aborts the process (Rust's out-of-memory handler)."""
        self.process.join(timeout=5)
        return bool(self.process.exitcode == -signal.SIGABRT)

    def close(self) -> None:
        self.kill()
        self.process.join(timeout=10)
        self.conn.close()


class CypherPool:
    """At most ``limits.workers`` worker processes, started on demand and reused.

    Admission (how many jobs, and how many per workspace) is the caller's: the store's
    Cypher lane (``lanes.Lanes``) lets at most ``workers`` jobs in at once."""

    def __init__(self, limits: CypherLimits) -> None:
        self.limits = limits
        self._idle: list[_Worker] = []
        self._busy: set[_Worker] = set()
        self._lock = threading.Lock()
        self._closed = False
        #: Jobs that carried a projection (the worker had no current graph) and jobs run
        #: on a worker's cached graph (for tests, benchmarks and diagnostics).
        self.projections_sent = 0
        self.cache_hits = 0
        # One thread per worker waits for its answer, so the event loop never blocks.
        self._threads = ThreadPoolExecutor(
            max_workers=limits.workers + 1, thread_name_prefix="nams-cypher"
        )
        if limits.prestart:
            self._threads.submit(self._prestart)

    def _prestart(self) -> None:
        for _ in range(self.limits.workers):
            self._replenish()

    def _replenish(self) -> None:
        """Fork a worker ahead of need, unless the pool is full (or closed)."""
        with self._lock:
            if self._closed or len(self._idle) + len(self._busy) >= self.limits.workers:
                return
        self._give_back(_Worker(self.limits.memory_mb * _MB))

    def _take(self) -> _Worker:
        """An idle live worker, or a new one (on a pool thread: a fork takes a moment)."""
        with self._lock:
            if self._closed:
                raise BackendUnavailableError("the SQLite store is closed")
            while self._idle:
                worker = self._idle.pop()
                if worker.alive:
                    self._busy.add(worker)
                    return worker
                worker.close()
        worker = _Worker(self.limits.memory_mb * _MB)
        with self._lock:
            self._busy.add(worker)
            closed = self._closed
        if closed:
            self._give_back(worker)
            worker.close()
            raise BackendUnavailableError("the SQLite store is closed")
        return worker

    def _give_back(self, worker: _Worker) -> None:
        """Back to the idle list; a dead one is dropped (the thread of its ``call``, if
        any, closes it: closing a pipe another thread waits on is not safe)."""
        with self._lock:
            self._busy.discard(worker)
            room = len(self._idle) + len(self._busy) < self.limits.workers
            if worker.alive and room and not self._closed:
                self._idle.append(worker)
                return
            dead = not worker.alive
        if not dead:
            worker.close()  # one too many, or the pool is closed: nothing else uses it
            return
        worker.kill()
        if not self._closed:  # the successor of a killed worker: forked now, not on demand
            with contextlib.suppress(RuntimeError):  # the pool shut down meanwhile
                self._threads.submit(self._replenish)

    def _give_back_taken(self, taken: asyncio.Future[_Worker]) -> None:
        """A worker taken for a caller that left before it arrived."""
        if taken.exception() is None:
            self._give_back(taken.result())

    @property
    def idle(self) -> int:
        """Live workers waiting for a job."""
        with self._lock:
            return sum(w.alive for w in self._idle)

    def busy_pids(self) -> list[int]:
        """Process ids of the workers running a query now (for tests and diagnostics)."""
        with self._lock:
            return [w.pid for w in self._busy if w.alive and w.in_flight]

    async def run(
        self, statement: Statement, workspace: str, version: int, load: Loader
    ) -> QueryResult:
        """Run ``statement`` over the workspace's graph in a worker, within the limits.

        ``version`` is the workspace's graph version now: a worker that has that graph
        cached gets no projection; any other gets the one ``load`` reads."""
        loop = asyncio.get_running_loop()
        limits = self.limits
        take = loop.run_in_executor(self._threads, self._take)
        try:
            worker = await asyncio.shield(take)
        except asyncio.CancelledError:
            take.add_done_callback(self._give_back_taken)
            raise
        try:

            async def send(key: cypher_worker.Key, projection: Projection | None) -> Any:
                job = (statement, key, projection, limits.max_rows, limits.timeout)
                call = loop.run_in_executor(self._threads, worker.call, job, limits.timeout)
                try:
                    return await asyncio.shield(call)
                except asyncio.CancelledError:
                    worker.kill()  # the caller left: stop the work now, not at the timeout
                    raise

            reply: tuple[Any, ...] = ("stale",)
            if worker.cached == (workspace, version):
                reply = await send((workspace, version), None)
            if reply[0] == "stale":  # not cached (or no longer): send the projection
                version, projection = await load()
                self.projections_sent += 1
                reply = await send((workspace, version), projection)
            else:
                self.cache_hits += 1
        finally:
            self._give_back(worker)
        return _result(reply, limits)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            workers = [*self._idle, *self._busy]
            self._idle.clear()
        for worker in workers:
            worker.kill()
        self._threads.shutdown(wait=True)
        for worker in workers:
            worker.close()


def _result(reply: tuple[Any, ...], limits: CypherLimits) -> QueryResult:
    kind = reply[0]
    if kind == "ok":
        return QueryResult(columns=reply[1], rows=reply[2])
    if kind == "invalid":
        raise InvalidInputError(reply[1])
    if kind == "rows":
        raise LimitExceededError(
            f"Cypher query answered more rows than the row limit of {limits.max_rows}: "
            "add a LIMIT or narrow the MATCH"
        )
    if kind in ("timeout", "deadline"):
        raise LimitExceededError(
            f"Cypher query stopped: it ran longer than the time limit of {limits.timeout:g} s "
            "(cypher_timeout); narrow the MATCH or add a WHERE"
        )
    if kind == "memory":
        raise LimitExceededError(
            f"Cypher query stopped: it needed more than the memory limit of "
            f"{limits.memory_mb} MB (cypher memory_mb); narrow the MATCH or add a WHERE"
        )
    raise BackendUnavailableError(
        "the Cypher worker stopped while running the query (it may have gone past the "
        f"memory limit of {limits.memory_mb} MB); try again"
    )
