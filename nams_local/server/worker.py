"""One worker process of ``nams-local serve --workers N``: ``python -m nams_local.server.worker``.

Started by the supervisor (``workers.py``), never by hand. Its stdin carries one JSON
object (the :class:`~nams_local.server.serve_options.ServeOptions`, the inherited file
descriptors of the listening socket and of the "ready" pipe, and the supervisor's pid), so
the API keys never appear on a command line. The worker then serves exactly what a
single-process ``serve`` serves (``serve.serve_on``), over its own store on the same file.

It hands the GIL over sooner than Python's default (``SWITCH_INTERVAL``, 0.5 ms instead
of 5 ms). A worker's writer thread holds the file's write lock (``write_lock.py``) while it
runs a group, and every SQLite call in the group releases the GIL; getting it back from the
busy event loop thread costs up to one switch interval. With the default, groups held the
lock 7–9 times their CPU time in a two-worker load run (the other worker waiting all the
while); at 0.5 ms, 3–5 times, with the same CPU per request (docs/sharing-a-file.md).

It dies with its supervisor: the kernel sends it SIGTERM when the supervisor goes away
(``PR_SET_PDEATHSIG``, Linux), even by SIGKILL, so a killed ``serve`` leaves no worker
holding the port or the file; elsewhere the supervisor's own shutdown is the only path.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import signal
import socket
import sys

from .serve import serve_on
from .serve_options import ServeOptions

__all__ = ["SWITCH_INTERVAL", "main"]

_PR_SET_PDEATHSIG = 1
#: Seconds a thread may keep the GIL while another waits for it (Python's default: 0.005).
SWITCH_INTERVAL = 0.0005


def _die_with(supervisor: int) -> None:
    """Have the kernel SIGTERM this process when its parent exits; exit now if it already
    has (the parent may die between starting us and this call)."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != supervisor:
        raise SystemExit(1)


def main() -> int:
    spec = json.loads(sys.stdin.readline())
    _die_with(int(spec["supervisor"]))
    sys.setswitchinterval(SWITCH_INTERVAL)  # the writer holds the file's lock: hand over soon
    options = ServeOptions.from_dict(spec["options"])
    sock = socket.socket(fileno=int(spec["listen_fd"]))
    sock.set_inheritable(False)  # not into the Cypher worker processes this one starts
    ready_fd = int(spec["ready_fd"])
    os.set_inheritable(ready_fd, False)
    ready = os.fdopen(ready_fd, "wb", buffering=0)

    def on_ready() -> None:
        ready.write(b"ready\n")

    try:
        return serve_on(sock, options, on_ready=on_ready)
    finally:
        ready.close()
        sock.close()


if __name__ == "__main__":
    sys.exit(main())
