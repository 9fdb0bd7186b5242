"""Bounded lanes: each kind of work has its own workers, and no workspace can fill them.

A store serves every workspace of a server from one process. If all kinds of work shared
one pool (asyncio's default executor, as they once did), six slow Cypher queries from one
tenant were enough to make every other tenant's requests wait, authentication included.
So each kind of work gets a ``Lane``: a fixed number of workers of its own, of which one
workspace may hold at most ``per_workspace`` at once. Work beyond that waits in a queue of
its workspace; queues are served round-robin across workspaces (first come, first served
within one), so a workspace with a hundred queued jobs delays another workspace's job by
at most one job per worker, never by a hundred. A workspace's queue is bounded too: past
``queue`` waiting jobs a new one is refused at once with ``TooManyRequestsError`` (429),
and a job that waited ``wait`` seconds without a worker is refused with
``BackendUnavailableError`` (503). Both messages name the limit.

The lanes of a store (``Lanes``): ``embed`` (the embedder, on threads of its own), ``reads``
(admission to the store's reader threads) and ``cypher`` (the Cypher worker processes,
``cypher_pool.py``). The writer is the store's single database thread.
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
from collections import Counter, OrderedDict, deque
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

from nams_local.errors import BackendUnavailableError, InvalidInputError, TooManyRequestsError

from .cypher_pool import CypherLimits, CypherPool

__all__ = ["FairGate", "Lane", "LaneLimits", "Lanes"]

P = ParamSpec("P")
R = TypeVar("R")

#: The key of work that belongs to no single workspace (it is bounded only by capacity).
_SHARED = "\x00shared"


class GateFull(Exception):
    """The key's queue is full (``FairGate.acquire``)."""


class _Waiter:
    """One queued ``acquire``: its future (of the loop it waits on) and where it stands.

    ``state`` changes only under the gate's lock: ``waiting`` (queued), ``granted`` (a
    place is counted for it), ``gone`` (it left, or will never run: its loop closed).
    A grant it never takes is released by whoever turns ``granted`` into ``gone``
    (``FairGate._pass_on``): the waiter giving up on its own loop, or a releaser that found
    that loop closed."""

    __slots__ = ("future", "loop", "state")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.future: asyncio.Future[None] = loop.create_future()
        self.state = "waiting"


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _wake(waiter: _Waiter) -> None:
    """On the waiter's loop: it has its place (unless it gave up meanwhile: then its
    ``acquire`` is unwinding and passes the place on itself)."""
    if not waiter.future.done():
        waiter.future.set_result(None)


class FairGate:
    """At most ``capacity`` holders, at most ``per_key`` of them with one key; waiters are
    admitted round-robin across keys and in arrival order within a key, at most ``queue``
    of them per key.

    Thread-safe, and bound to no event loop: one store may be driven by several loops in
    several threads at once (an application sharing one backend object between threads;
    the ``turn`` benchmark once served its in-process backend from uvicorn's loop in a
    second thread). So the counts and queues are kept under a ``threading.Lock``, and a
    release wakes a waiter of another loop through that loop's ``call_soon_threadsafe``
    (a plain ``set_result`` from another thread would leave that loop asleep in
    ``select`` -- the benchmark's hang). A place granted to a waiter that gives up before
    it runs again (cancelled, timed out, its loop closed) is passed on, never lost."""

    def __init__(self, capacity: int, per_key: int, queue: int) -> None:
        self.capacity = capacity
        self.per_key = per_key
        self.queue = queue
        self._lock = threading.Lock()
        self._total = 0
        self._running: Counter[str] = Counter()
        self._waiting: OrderedDict[str, deque[_Waiter]] = OrderedDict()

    def _cap(self, key: str) -> int:
        return self.capacity if key == _SHARED else self.per_key

    def _grant(self, key: str) -> None:
        self._total += 1
        self._running[key] += 1

    async def acquire(self, key: str, wait: float | None = None) -> None:
        """Hold a place; ``GateFull`` if ``key`` already has ``queue`` waiters,
        ``TimeoutError`` after ``wait`` seconds without a place."""
        loop = asyncio.get_running_loop()
        with self._lock:
            waiters = self._waiting.get(key)
            if not waiters and self._total < self.capacity and self._running[key] < self._cap(key):
                self._grant(key)
                return
            if len(waiters or ()) >= self.queue:
                raise GateFull(key)
            waiter = _Waiter(loop)
            self._waiting.setdefault(key, deque()).append(waiter)
        try:
            async with asyncio.timeout(wait):
                await waiter.future
        except BaseException:
            self._give_up(key, waiter)
            raise

    def _give_up(self, key: str, waiter: _Waiter) -> None:
        """The waiter leaves: out of its queue, or, granted meanwhile, its place passed on."""
        with self._lock:
            if waiter.state == "waiting":
                self._forget(key, waiter)
                waiter.state = "gone"
        waiter.future.cancel()
        self._pass_on(key, waiter)

    def _pass_on(self, key: str, waiter: _Waiter) -> None:
        """A place granted to ``waiter`` that it will never take goes to the next waiter.
        Whoever turns ``granted`` into ``gone`` releases it (the waiter giving up on its
        loop, or a releaser that found the waiter's loop closed): exactly once."""
        with self._lock:
            granted = waiter.state == "granted"
            waiter.state = "gone"
        if granted:
            self.release(key)

    def _forget(self, key: str, waiter: _Waiter) -> None:
        """Under the lock: ``waiter`` out of ``key``'s queue."""
        waiters = self._waiting.get(key)
        if waiters is not None:
            if waiter in waiters:
                waiters.remove(waiter)
            if not waiters:
                del self._waiting[key]

    def release(self, key: str) -> None:
        """Give back a place of ``key`` (from any thread) and admit whoever is next."""
        with self._lock:
            self._total -= 1
            self._running[key] -= 1
            if self._running[key] <= 0:
                del self._running[key]
            granted = self._dispatch()
        here = _running_loop()
        for grant_key, waiter in granted:
            if waiter.loop is here:
                _wake(waiter)
                continue
            try:
                waiter.loop.call_soon_threadsafe(_wake, waiter)
            except RuntimeError:  # its loop is closed: nobody will take the place
                self._pass_on(grant_key, waiter)

    def _dispatch(self) -> list[tuple[str, _Waiter]]:
        """Under the lock: free places to waiters, one key at a time in round-robin order.
        Returns the waiters granted a place (woken by the caller, outside the lock)."""
        granted: list[tuple[str, _Waiter]] = []
        while self._total < self.capacity:
            for key in list(self._waiting):
                if self._running[key] >= self._cap(key):
                    continue
                waiters = self._waiting[key]
                waiter = waiters.popleft()
                waiter.state = "granted"
                self._grant(key)
                granted.append((key, waiter))
                # The key goes to the back of the round: others are served first next time.
                self._waiting.move_to_end(key)
                if not waiters:
                    del self._waiting[key]
                break
            else:
                break
        return granted

    @property
    def running(self) -> int:
        with self._lock:
            return self._total

    def waiting(self) -> int:
        with self._lock:
            return sum(len(w) for w in self._waiting.values())


@dataclass(frozen=True, slots=True)
class LaneLimits:
    """How much of a kind of work may run, per workspace and in all."""

    #: Workers of the lane (threads or processes).
    workers: int
    #: Of those, how many one workspace may hold at once (fewer than ``workers`` whenever
    #: ``workers`` > 1, so one workspace never holds them all).
    per_workspace: int
    #: Jobs of one workspace that may wait for a worker; more are refused with 429.
    queue: int
    #: Seconds a job may wait for a worker before it is refused with 503 (None: no bound).
    wait: float | None = None

    def __post_init__(self) -> None:
        if self.workers < 1 or self.per_workspace < 1 or self.queue < 0:
            raise InvalidInputError("lane limits: workers and per_workspace >= 1, queue >= 0")
        if self.wait is not None and self.wait <= 0:
            raise InvalidInputError("lane limits: wait must be > 0")

    @classmethod
    def shared_fairly(cls, workers: int, queue: int, wait: float | None = None) -> LaneLimits:
        """``workers`` of which one workspace may hold all but one (all, if only one)."""
        return cls(workers, max(1, workers - 1), queue, wait)


class Lane:
    """One kind of work: admission through a ``FairGate`` and, for thread work, a thread
    pool of its own of ``limits.workers`` threads."""

    def __init__(self, name: str, limits: LaneLimits, *, threads: bool = False) -> None:
        self.name = name
        self.limits = limits
        self._gate = FairGate(limits.workers, limits.per_workspace, limits.queue)
        self._threads = (
            ThreadPoolExecutor(max_workers=limits.workers, thread_name_prefix=f"nams-{name}")
            if threads
            else None
        )

    @asynccontextmanager
    async def slot(self, workspace: str | None) -> AsyncIterator[None]:
        """Hold one of the lane's workers for ``workspace`` (``None``: work of no single
        workspace, bounded only by the lane's size)."""
        key = _SHARED if workspace is None else workspace
        limits = self.limits
        try:
            await self._gate.acquire(key, limits.wait)
        except GateFull:
            raise TooManyRequestsError(
                f"too many {self.name} jobs at once in this workspace: at most "
                f"{limits.per_workspace} running and {limits.queue} waiting "
                f"(the per-workspace {self.name} limit)",
                retry_after=1.0,
            ) from None
        except TimeoutError:
            raise BackendUnavailableError(
                f"the {self.name} lane is busy: no worker was free within {limits.wait:g} s "
                f"({limits.workers} workers, {limits.per_workspace} per workspace)",
                retry_after=limits.wait,
            ) from None
        try:
            yield
        finally:
            self._gate.release(key)

    async def run(
        self, workspace: str | None, fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs
    ) -> R:
        """``fn(*args, **kwargs)`` on one of the lane's threads, once a slot is free."""
        assert self._threads is not None, f"the {self.name} lane has no threads"
        async with self.slot(workspace):
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._threads, functools.partial(fn, *args, **kwargs))

    @property
    def running(self) -> int:
        """Jobs holding a worker now."""
        return self._gate.running

    @property
    def waiting(self) -> int:
        """Jobs waiting for a worker now."""
        return self._gate.waiting()

    def close(self) -> None:
        if self._threads is not None:
            self._threads.shutdown(wait=True)


def _cores() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)


#: The store's reader threads (``store.READER_THREADS``) and how many one workspace holds.
READ_LIMITS = LaneLimits(workers=3, per_workspace=2, queue=256)


class Lanes:
    """The bounded lanes of one store, shared by all its workspace views."""

    def __init__(self, cypher: CypherLimits | None = None) -> None:
        embed_workers = max(2, _cores())
        #: The embedder (queries and writes): as many threads as cores.
        self.embed = Lane(
            "embedding", LaneLimits.shared_fairly(embed_workers, queue=1024), threads=True
        )
        #: Admission to the reader threads (the threads themselves are the store's).
        self.reads = Lane("read", READ_LIMITS)
        limits = cypher or CypherLimits()
        #: Admission of Cypher queries (a job waits at most its own time limit for a worker).
        self.cypher_slots = Lane(
            "Cypher",
            LaneLimits(limits.workers, limits.per_workspace, limits.queue, wait=limits.timeout),
        )
        #: Cypher in killable worker processes, with its time, memory and row limits.
        self.cypher = CypherPool(limits)

    def close(self) -> None:
        self.cypher.close()
        self.embed.close()
