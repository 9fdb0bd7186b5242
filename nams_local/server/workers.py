"""``nams-local serve --workers N``: N serving processes on one socket and one database file.

One ``serve`` process is bounded by one GIL and one writer thread. This supervisor binds
the address once (``sockets.bind``, so ``--port 0`` and the banner work as before) and starts
N workers (``python -m nams_local.server.worker``), each handed a socket of its own bound
to that address with ``SO_REUSEPORT`` (``sockets.bind_like``; it listens once the worker
serves), and serves over its own store on the same file, the engine's multi-process
support (docs/sharing-a-file.md) keeping them consistent. The kernel spreads new
connections over the listening sockets by their addresses. Why not one shared listening
socket: a worker woken by a burst of connections accepts every one queued at that moment,
and keep-alive clients stay where they landed — in a ``load --workers 2`` run 26 of the 32
connections went to one worker, and bursts of 64 split 52/12, 57/7, 60/4 (the other worker
idling). Where the kernel does not spread (``sockets.SPREAD`` false: not Linux), the
workers share the supervisor's listening socket as before. A dead worker's queued,
not yet accepted connections go with its socket (the others take new ones meanwhile).

Why a supervisor of our own and not uvicorn's ``--workers``: uvicorn's needs the app as an
import string built in each child from the environment, while ``serve`` builds its app from
options (API keys, the ready file, the banner naming the real port), and it cannot tell
when *every* worker is ready, which is when the ready file must appear.

What it does, and decided:

- Start-up: the first worker starts alone and is waited for (it migrates the file's schema
  and recovers leftovers once), then the others together. The banner and the ready file
  (whose ``pid`` is the supervisor's) appear only when every worker accepts requests. A
  worker that fails to start fails ``serve`` with the worker's exit status (2 for a setting
  the engine refused), after stopping the others.
- A worker that dies later is reported on stderr and replaced; more than
  :data:`MAX_RESTARTS` deaths within :data:`RESTART_WINDOW` seconds is a crash loop, and
  ``serve`` stops with status 1 rather than hide it.
- SIGINT/SIGTERM: every worker gets SIGTERM and shuts down gracefully (its store closed,
  its Cypher workers stopped); one still running after :data:`GRACE_SECONDS` is killed.
  Workers run in their own process group, so a terminal's Ctrl-C reaches the supervisor
  only (which forwards it once), and they die with the supervisor even when it is killed
  (``worker.py``). The exit status is 0 when every worker exited cleanly.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from .serve_options import ServeOptions
from .sockets import SPREAD, bind_like

__all__ = ["GRACE_SECONDS", "MAX_RESTARTS", "RESTART_WINDOW", "START_SECONDS", "Supervisor"]

log = logging.getLogger("nams_local.server")

#: How long one start-up phase (the first worker, then the rest) may take.
START_SECONDS = 120.0
#: How long a worker has to shut down gracefully after SIGTERM before it is killed.
GRACE_SECONDS = 30.0
#: More worker deaths than this within ``RESTART_WINDOW`` seconds stop ``serve``.
MAX_RESTARTS = 5
RESTART_WINDOW = 60.0
#: How often the supervisor looks at its workers when nothing wakes it.
_TICK = 1.0
#: The directory holding the ``nams_local`` package: first on the workers' ``PYTHONPATH``,
#: so they run the very code the supervisor runs.
_CODE_ROOT = str(Path(__file__).resolve().parents[2])


@dataclass
class _Worker:
    index: int
    process: subprocess.Popen[bytes]
    #: The read end of the pipe the worker writes "ready" to; EOF when it exits.
    pipe: int
    ready: bool = False
    buffer: bytearray = field(default_factory=bytearray)

    def read(self) -> None:
        """Take what the pipe has; at EOF close it (the worker is gone or going)."""
        try:
            chunk = os.read(self.pipe, 64)
        except BlockingIOError:
            return
        if not chunk:
            os.close(self.pipe)
            self.pipe = -1
            return
        self.buffer += chunk
        self.ready = self.ready or b"ready\n" in self.buffer


class Supervisor:
    """Runs ``count`` workers on ``sock`` until SIGINT/SIGTERM (see the module docstring)."""

    def __init__(
        self,
        sock: socket.socket,
        options: ServeOptions,
        count: int,
        *,
        on_ready: Callable[[], None],
        start_seconds: float = START_SECONDS,
        grace_seconds: float = GRACE_SECONDS,
    ) -> None:
        self.sock = sock
        self.options = options
        self.count = count
        self.on_ready = on_ready
        self.start_seconds = start_seconds
        self.grace_seconds = grace_seconds
        self.workers: list[_Worker] = []
        self._stopping = False
        self._wake = (-1, -1)
        self._deaths: deque[float] = deque()

    # -- the supervisor's life ---------------------------------------------------------
    def run(self) -> int:
        """The exit status: 0 after a graceful shutdown of every worker."""
        self._wake = os.pipe()
        for fd in self._wake:
            os.set_blocking(fd, False)
        previous_wakeup = signal.set_wakeup_fd(self._wake[1])
        previous = {sig: signal.signal(sig, self._stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        status = 1
        try:
            status = self._serve()
        finally:
            clean = self._stop_all()
            signal.set_wakeup_fd(previous_wakeup)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            for fd in self._wake:
                os.close(fd)
        return status if status != 0 else (0 if clean else 1)

    def _serve(self) -> int:
        first = self._spawn(0)
        failed = self._wait_ready([first])
        if failed is not None or self._stopping:
            return failed or 0
        failed = self._wait_ready([self._spawn(i) for i in range(1, self.count)])
        if failed is not None or self._stopping:
            return failed or 0
        self.on_ready()
        return self._watch()

    def _stop(self, signum: int, frame: FrameType | None) -> None:
        self._stopping = True

    # -- workers -----------------------------------------------------------------------
    def _spawn(self, index: int) -> _Worker:
        own = bind_like(self.sock) if SPREAD else None
        listener = own if own is not None else self.sock
        read_end, write_end = os.pipe()
        os.set_blocking(read_end, False)
        spec = {
            "options": self.options.to_dict(),
            "listen_fd": listener.fileno(),
            "ready_fd": write_end,
            "supervisor": os.getpid(),
            "index": index,
        }
        env = dict(os.environ)
        paths = [_CODE_ROOT, *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
        try:
            process = subprocess.Popen(
                [sys.executable, "-m", "nams_local.server.worker"],
                stdin=subprocess.PIPE,
                stdout=_stderr_fd(),
                pass_fds=(listener.fileno(), write_end),
                process_group=0,
                env=env,
            )
        finally:
            os.close(write_end)
            if own is not None:
                own.close()  # the worker's now: it goes when the worker does
        assert process.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            process.stdin.write(json.dumps(spec).encode() + b"\n")
        with contextlib.suppress(BrokenPipeError):
            process.stdin.close()
        worker = _Worker(index, process, read_end)
        self.workers.append(worker)
        return worker

    def _wait_ready(self, starting: list[_Worker]) -> int | None:
        """Wait until every one of ``starting`` accepts requests; ``None`` then (or on a
        signal), else the failed start's exit status."""
        deadline = time.monotonic() + self.start_seconds
        while not self._stopping and not all(w.ready for w in starting):
            for worker in starting:
                if worker.process.poll() is not None and not worker.ready:
                    code = worker.process.returncode
                    print(
                        f"nams-local serve: worker {worker.index + 1} (pid {worker.process.pid}) "
                        f"exited while starting (status {code})",
                        file=sys.stderr,
                    )
                    return code if code and code > 0 else 1
            left = deadline - time.monotonic()
            if left <= 0:
                print(
                    f"nams-local serve: workers not ready after {self.start_seconds:g} s",
                    file=sys.stderr,
                )
                return 1
            self._sleep(starting, min(left, _TICK))
        return None

    def _watch(self) -> int:
        """Until a signal: replace a worker that died; 1 on a crash loop."""
        while not self._stopping:
            self._sleep(self.workers, _TICK)
            for worker in list(self.workers):
                code = worker.process.poll()
                if code is None or self._stopping:
                    continue
                self.workers.remove(worker)
                if worker.pipe >= 0:
                    os.close(worker.pipe)
                now = time.monotonic()
                self._deaths.append(now)
                while self._deaths and self._deaths[0] < now - RESTART_WINDOW:
                    self._deaths.popleft()
                if len(self._deaths) > MAX_RESTARTS:
                    log.error(
                        "worker %d (pid %d) exited with status %s: %d deaths in %.0f s, stopping",
                        worker.index + 1,
                        worker.process.pid,
                        code,
                        len(self._deaths),
                        RESTART_WINDOW,
                    )
                    return 1
                replacement = self._spawn(worker.index)
                log.warning(
                    "worker %d (pid %d) exited with status %s; replaced by pid %d",
                    worker.index + 1,
                    worker.process.pid,
                    code,
                    replacement.process.pid,
                )
        return 0

    def _sleep(self, watched: list[_Worker], timeout: float) -> None:
        """Until a worker's pipe or a signal wakes us, at most ``timeout`` seconds."""
        pipes = {w.pipe: w for w in watched if w.pipe >= 0}
        readable, _, _ = select.select([self._wake[0], *pipes], [], [], timeout)
        for fd in readable:
            if fd == self._wake[0]:
                with contextlib.suppress(BlockingIOError):
                    os.read(fd, 512)
            else:
                pipes[fd].read()

    def _stop_all(self) -> bool:
        """SIGTERM every live worker, SIGKILL any still running after the grace period;
        whether all of them exited cleanly."""
        for worker in self.workers:
            if worker.process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    worker.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.grace_seconds
        clean = True
        for worker in self.workers:
            try:
                worker.process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.error(
                    "worker %d (pid %d) ignored SIGTERM: killed",
                    worker.index + 1,
                    worker.process.pid,
                )
                worker.process.kill()
                worker.process.wait()
            # A worker still starting when the signal came has no handler yet: SIGTERM's
            # default action ends it, which is the stop that was asked for.
            clean = clean and worker.process.returncode in (0, -signal.SIGTERM)
            if worker.pipe >= 0:
                os.close(worker.pipe)
                worker.pipe = -1
        return clean


def _stderr_fd() -> int | None:
    """Workers print nothing on stdout (the banner is the supervisor's first line, which
    scripts parse); whatever they do print goes to stderr."""
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return None
