"""The life of a Cypher worker process (started by ``cypher_pool.CypherPool``).

Kept apart from the engine so a worker imports only the interpreter (``cypher_run``):
the forkserver that forks workers imports this module once, and the less it imports, the
sooner the first query of a fresh server runs.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
from multiprocessing.connection import Connection
from typing import Any

from nams_local.errors import InvalidInputError

from .cypher_run import Projection, answer, build_graph
from .cypher_text import Statement

__all__ = ["NICENESS", "Job", "serve"]

#: How much lower than the server a worker's CPU priority is. A query at its time limit
#: burns a whole core for seconds; on a small machine that core is half of what the server
#: has to answer every other tenant with. At nice +5 the kernel gives the worker about a
#: quarter of a core it contends for with the server (CFS weights 335 against 1024) and
#: all of an idle one. Not more: the time limit is wall-clock, so on a machine overloaded
#: by other programs a deeper nice made even a cheap query run out of time.
NICENESS = 5

#: What the parent sends: the statement, the workspace's projection, the row limit.
Job = tuple[Statement, Projection, int]


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


def _reply(job: Job) -> tuple[Any, ...]:
    statement, projection, max_rows = job
    try:
        columns, rows = answer(build_graph(projection), statement)
    except InvalidInputError as exc:
        return ("invalid", exc.message)
    if len(rows) > max_rows:
        return ("rows", len(rows))
    return ("ok", columns, rows)


def serve(conn: Connection, memory_bytes: int) -> None:
    """Cap the address space, then answer jobs until the pipe closes.

    Replies: ``("ok", columns, rows)``, ``("invalid", message)``, ``("rows", count)`` or
    ``("memory",)``; after a ``MemoryError`` the worker exits (nothing of its heap is
    trusted) and the pool forks a fresh one."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the server's to handle
    with contextlib.suppress(OSError):
        os.nice(NICENESS)
    _cap_address_space(memory_bytes)
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        try:
            reply = _reply(job)
        except MemoryError:
            del job
            with contextlib.suppress(OSError, MemoryError):
                conn.send(("memory",))
            return
        conn.send(reply)
