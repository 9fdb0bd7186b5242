"""The life of a Cypher worker process (started by ``cypher_pool.CypherPool``).

Kept apart from the engine so a worker imports only the interpreter (``cypher_run``):
the forkserver that forks workers imports this module once, and the less it imports, the
sooner the first query of a fresh server runs.

A worker keeps the last graph it built, under the key ``(workspace, graph version)``
(``cypher_generations.py``): the parent sends the projection only when the worker's key is
not the current one. One graph, not one per workspace: a cached graph counts against the
worker's memory limit, and a query must keep that room.
"""

from __future__ import annotations

import contextlib
import resource
import signal
import time
from multiprocessing.connection import Connection
from typing import Any

from nams_local.errors import InvalidInputError

from .cypher_run import Projection, QueryTimeout, answer, build_graph
from .cypher_text import Statement

__all__ = ["NICENESS", "Job", "Key", "serve"]

#: How much lower than the server a worker's CPU priority is. A query at its time limit
#: burns a whole core for seconds; on a small machine that core is half of what the server
#: has to answer every other tenant with. At nice +5 the kernel gives the worker about a
#: quarter of a core it contends for with the server (CFS weights 335 against 1024) and
#: all of an idle one. Not more: the time limit is wall-clock, so on a machine overloaded
#: by other programs a deeper nice made even a cheap query run out of time.
NICENESS = 5

#: Which graph: the workspace and its graph version.
Key = tuple[str, int]

#: What the parent sends: the statement, the graph's key, its projection (``None``: the
#: worker has that graph cached), the row limit and the time limit in seconds.
Job = tuple[Statement, Key, Projection | None, int, float]


def _address_space() -> int:
    """This process's current virtual size in bytes (``VmSize``), 0 if unknown."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _cap_address_space(extra_bytes: int) -> None:
    """Allow ``extra_bytes`` of address space beyond what the worker has now."""
    base = _address_space()
    if not base:
        return
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = base + extra_bytes
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


class _Cache:
    """The one graph this worker keeps."""

    def __init__(self) -> None:
        self.key: Key | None = None
        self.graph: Any = None

    def graph_for(self, key: Key, projection: Projection | None) -> Any:
        if projection is None:
            return self.graph if key == self.key else None
        self.key = self.graph = None  # the old graph goes before the new one is built
        graph = build_graph(projection)
        self.key, self.graph = key, graph
        return graph


def _reply(job: Job, cache: _Cache) -> tuple[Any, ...]:
    statement, key, projection, max_rows, timeout = job
    started = time.monotonic()
    graph = cache.graph_for(key, projection)
    if graph is None:
        return ("stale",)
    left_ms = max(1, int((timeout - (time.monotonic() - started)) * 1000))
    try:
        columns, rows = answer(graph, statement, timeout_ms=left_ms, row_limit=max_rows + 1)
    except InvalidInputError as exc:
        return ("invalid", exc.message)
    except QueryTimeout:
        return ("deadline",)
    if len(rows) > max_rows:
        return ("rows", len(rows))
    return ("ok", columns, rows)


def serve(conn: Connection, memory_bytes: int) -> None:
    """Cap the address space, then answer jobs until the pipe closes.

    Replies: ``("ok", columns, rows)``, ``("invalid", message)``, ``("rows", count)``,
    ``("deadline",)`` (the engine's own deadline), ``("stale",)`` (no projection came and
    the cached graph is another) or ``("memory",)``; after a ``MemoryError`` the worker
    exits (nothing of its heap is trusted) and the pool forks a fresh one. kglite's own
    allocations past the cap abort the process instead (``SIGABRT``), which the pool reads
    as the memory limit too."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the server's to handle
    _cap_address_space(memory_bytes)
    cache = _Cache()
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        try:
            reply = _reply(job, cache)
        except MemoryError:
            del job
            cache.key = cache.graph = None
            with contextlib.suppress(OSError, MemoryError):
                conn.send(("memory",))
            return
        conn.send(reply)
