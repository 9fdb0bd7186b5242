"""Futures of the writer thread awaited on an event loop, with one wakeup per group.

``asyncio.wrap_future`` completes each awaiting future through its own
``loop.call_soon_threadsafe``: one write to the loop's self-pipe per future. The writer
thread resolves a whole group's futures at once after its commit, so a group of 30 adds
cost the writer 30 socket sends, each a system call that releases the GIL and then has to
win it back from the busy event loop thread. Under the no-embeddings load mix a profile of
the writer put more wall time in those sends than in all its SQL.

``BatchedWakeups`` delivers them in bursts instead: a finished future goes on its loop's
list, and one loop callback settles every future on the list. Inside ``burst()`` (the
writer publishing a group's results) nothing is scheduled until the burst ends, so a
group costs each loop one wakeup; outside one, the first future of a burst schedules the
callback and the ones finishing before it runs join it. What a caller sees is unchanged:
its result or exception, after the commit; and cancelling the awaiting future cancels the
writer's future (a unit not yet started is then skipped, as with ``wrap_future``).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any, TypeVar

__all__ = ["BatchedWakeups"]

R = TypeVar("R")


class _LoopInbox:
    """Finished futures waiting to be settled on one event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        # Weakly: the inbox is the value of a weak-keyed map, so a strong reference
        # back to its loop would keep every loop ever used alive.
        self._loop = weakref.ref(loop)
        self._lock = threading.Lock()
        self._done: list[tuple[asyncio.Future[Any], Future[Any]]] = []
        self._scheduled = False

    def deliver(self, target: asyncio.Future[Any], source: Future[Any], *, hold: bool) -> None:
        """From any thread: ``source`` is done; settle ``target`` on the loop (``hold``:
        not before ``release``)."""
        with self._lock:
            self._done.append((target, source))
            if hold or self._scheduled:
                return
            self._scheduled = True
        self._schedule()

    def release(self) -> None:
        """The burst is over: schedule the settling of what it delivered."""
        with self._lock:
            if self._scheduled or not self._done:
                return
            self._scheduled = True
        self._schedule()

    def _schedule(self) -> None:
        loop = self._loop()
        if loop is None or loop.is_closed():
            return  # nobody awaits on a loop that is gone
        # RuntimeError: the loop closed meanwhile.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self._flush)

    def _flush(self) -> None:
        with self._lock:
            batch, self._done = self._done, []
            self._scheduled = False
        for target, source in batch:
            if target.done():  # cancelled by its caller meanwhile
                continue
            if source.cancelled():
                target.cancel()
                continue
            error = source.exception()
            if error is not None:
                target.set_exception(error)
            else:
                target.set_result(source.result())


class BatchedWakeups:
    """``wrap`` is ``asyncio.wrap_future`` for futures resolved in bursts by one thread."""

    def __init__(self) -> None:
        self._inboxes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopInbox] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()
        #: Per thread: the inboxes a running ``burst`` delivered to (absent: no burst).
        self._bursts = threading.local()

    def _inbox(self, loop: asyncio.AbstractEventLoop) -> _LoopInbox:
        with self._lock:
            inbox = self._inboxes.get(loop)
            if inbox is None:
                inbox = self._inboxes[loop] = _LoopInbox(loop)
            return inbox

    def wrap(self, source: Future[R]) -> asyncio.Future[R]:
        """An awaitable of the running loop that settles like ``source``."""
        loop = asyncio.get_running_loop()
        target: asyncio.Future[R] = loop.create_future()
        inbox = self._inbox(loop)

        def cancel_source(done: asyncio.Future[R]) -> None:
            if done.cancelled():
                source.cancel()

        def finished(done: Future[R]) -> None:
            held: set[_LoopInbox] | None = getattr(self._bursts, "inboxes", None)
            if held is not None:
                held.add(inbox)
            inbox.deliver(target, done, hold=held is not None)

        target.add_done_callback(cancel_source)
        source.add_done_callback(finished)
        return target

    @contextlib.contextmanager
    def burst(self) -> Iterator[None]:
        """Futures finished by this thread inside the block wake their loops once, when
        it ends (the writer wraps the publishing of a group's results in it)."""
        if getattr(self._bursts, "inboxes", None) is not None:
            yield  # nested: the outer burst releases
            return
        held: set[_LoopInbox] = set()
        self._bursts.inboxes = held
        try:
            yield
        finally:
            del self._bursts.inboxes
            for inbox in held:
                inbox.release()
