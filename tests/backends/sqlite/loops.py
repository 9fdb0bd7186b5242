"""Coroutines run on several event loops at once, each loop in a thread of its own.

One ``SQLiteBackend`` (or one admission gate) shared by loops in several threads is what
an application sharing one backend object between threads does, and what the ``turn``
benchmark's loopback series once did (uvicorn's loop in a thread beside the main loop).
A wake-up that crosses loops without ``call_soon_threadsafe`` leaves the other loop asleep
in ``select``: ``run_on_loops`` then reports that its deadline passed instead of hanging,
and pokes the loops awake afterwards so that even a broken gate lets its threads end.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

__all__ = ["LoopsTimedOut", "run_on_loops"]

#: After a missed deadline: how long the loops are poked awake for their threads to end.
_CLEANUP_SECONDS = 30.0


class LoopsTimedOut(AssertionError):
    """Some loop did not finish its coroutine within the deadline."""


class _LoopThread(threading.Thread):
    def __init__(self, name: str, main: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        super().__init__(name=name, daemon=True)
        self._main = main
        self.loop: asyncio.AbstractEventLoop | None = None
        self.started_loop = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with asyncio.Runner() as runner:
                self.loop = runner.get_loop()
                self.started_loop.set()
                self.result = runner.run(self._main())
        except BaseException as error:
            self.error = error
        finally:
            self.started_loop.set()

    def poke(self) -> None:
        """Wake the loop once (a no-op callback through its self-pipe)."""
        loop = self.loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # closed meanwhile
                loop.call_soon_threadsafe(lambda: None)


def run_on_loops(
    mains: Sequence[Callable[[], Coroutine[Any, Any, Any]]], deadline: float
) -> list[Any]:
    """Each ``main()`` on its own event loop in its own thread, all at once; their results.
    ``LoopsTimedOut`` if not all are done within ``deadline`` seconds; the first error of
    a coroutine is raised again here."""
    threads = [_LoopThread(f"loop-{i}", main) for i, main in enumerate(mains)]
    for thread in threads:
        thread.start()
    end = time.monotonic() + deadline
    for thread in threads:
        thread.join(max(0.0, end - time.monotonic()))
    late = [thread.name for thread in threads if thread.is_alive()]
    if late:
        cleanup = time.monotonic() + _CLEANUP_SECONDS
        while any(t.is_alive() for t in threads) and time.monotonic() < cleanup:
            for thread in threads:
                thread.poke()
            for thread in threads:
                thread.join(0.05)
        raise LoopsTimedOut(f"{late} not done within {deadline:g} s")
    for thread in threads:
        if thread.error is not None:
            raise thread.error
    return [thread.result for thread in threads]
