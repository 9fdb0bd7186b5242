"""The rule extractor in a process of its own, for a server's background extraction.

The built-in ``RuleExtractor`` is pure Python: run on the event loop, or on any thread of
the server, it holds the one GIL that the event loop, the writer and the readers share. In
issue 12's ``--no-embeddings`` load it was about a sixth of the event loop's time, and a
``serve`` process serving every tenant is bound by that GIL, not by its cores (it used 1.2
of 2). In a child it runs on the other core beside the server; the server only pickles the
texts and the results (microseconds per message) on a thread of its own, which waits for
the child with the GIL released.

A run is sent whole (``offload.extract_run``: the messages of one pending batch, in order,
so the child sees the same preceding texts and user name as in process would). Runs go one
at a time, in the order they come, as the pipeline's one-batch-at-a-time lock already had
them. A child that dies (killed, out of memory) fails that run only: the pipeline extracts
it in process as before, and the next run starts a new child. The child is started on
first use with ``spawn`` (a fork of a process running threads is unsafe) and without
re-running the caller's main module (``cypher_pool.without_main``); it is a daemon, so it
never outlives the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import Any

from nams_local.extraction.offload import Outcome, RunItem, serve_runs

from .cypher_pool import without_main

__all__ = ["RuleProcess", "shared"]


class RuleProcess:
    """The rule extractor in a child process (see the module docstring)."""

    def __init__(self) -> None:
        #: Waits for the child with the GIL released; one thread, so runs never interleave.
        self._io = ThreadPoolExecutor(1, thread_name_prefix="nams-extract")
        self._lock = threading.Lock()
        self._conn: Connection | None = None
        self._process: Any = None
        self._closed = False
        #: Runs the child answered (how a test, or a curious operator, sees it working).
        self.runs = 0

    @property
    def pid(self) -> int | None:
        """The child's process id; ``None`` before its first run or after it died."""
        process = self._process
        return None if process is None else int(process.pid)

    async def run(self, items: Sequence[RunItem], known: str | None) -> list[Outcome]:
        """``offload.extract_run`` of the rule extractor over ``items``, in the child.
        Raises ``EOFError`` or ``OSError`` when the child failed (extract in process)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._io, self._round_trip, list(items), known)

    def _round_trip(self, items: list[RunItem], known: str | None) -> list[Outcome]:
        with self._lock:
            if self._closed:
                raise EOFError("the extraction process is closed")
            conn = self._conn or self._start()
            try:
                conn.send((items, known))
                outcomes: list[Outcome] = conn.recv()
            except (EOFError, OSError):
                self._stop()
                raise
            self.runs += 1
            return outcomes

    def _start(self) -> Connection:
        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe()
        process = context.Process(
            target=serve_runs, args=(child,), name="nams-extract", daemon=True
        )
        with without_main():
            process.start()
        child.close()
        self._conn, self._process = parent, process
        return parent

    def _stop(self) -> None:
        conn, process = self._conn, self._process
        self._conn = self._process = None
        if conn is not None:
            with contextlib.suppress(OSError, ValueError):
                conn.send(None)
            conn.close()
        if process is not None:
            process.join(timeout=2)
            if process.is_alive():
                process.kill()
                process.join(timeout=2)

    def close(self) -> None:
        """Stop the child (it would also die with this process: it is a daemon)."""
        with self._lock:
            self._closed = True
            self._stop()
        self._io.shutdown(wait=False)


_shared: RuleProcess | None = None
_shared_lock = threading.Lock()


def shared() -> RuleProcess:
    """The process-wide ``RuleProcess``: one child serves every store of the process."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = RuleProcess()
        return _shared
