"""``nams-local serve`` as a real subprocess for the HTTP benchmarks, watched and stopped by PID.

The load benchmarks measure the server a user runs, so it is the real command in its own
process (its own GIL and event loop, not a thread beside the client), on a free loopback
port, over a temporary database. This module starts it, waits for ``/healthz``, reads its
CPU time and resident memory from ``/proc`` (what a run cost the server), kills it when its
memory passes a bound (a hostile workload must not take the shared machine down with it),
and stops it by its PID on the way out, also after an error or ``KeyboardInterrupt``.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from ._common import positive

__all__ = [
    "REPO_ROOT",
    "ServeProcess",
    "child_environment",
    "children_cpu_seconds",
    "direct_children",
    "process_cpu_seconds",
    "process_rss_bytes",
]

REPO_ROOT = Path(__file__).resolve().parent.parent
_LISTENING = re.compile(r"serving http://127\.0\.0\.1:(\d+)/v1")
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def add_serve_options(group: Any, *, extraction: Sequence[str]) -> None:
    """``--no-embeddings``, ``--extraction MODE`` and ``--workers N``: how the benchmark's
    server runs."""
    group.add_argument(
        "--no-embeddings", action="store_true", help="serve --no-embeddings (text search only)"
    )
    group.add_argument(
        "--workers",
        type=positive,
        default=1,
        metavar="N",
        help="serve --workers N (N processes over the one file; their CPU is the server's); "
        "default 1",
    )
    group.add_argument(
        "--extraction",
        choices=tuple(extraction),
        help="the server's extraction mode ($NAMS_EXTRACTION); default: serve's own default",
    )


def child_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment for a child, with this checkout first on ``PYTHONPATH``
    (the code the benchmark runs from is the code the server and the clients run)."""
    env = dict(os.environ)
    paths = [str(REPO_ROOT), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.update(extra or {})
    return env


def process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of ``pid`` so far (Linux ``/proc``), ``None`` elsewhere."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces: the fields we want follow its ")".
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def _stat_fields(pid: int | str) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (which may hold spaces)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None  # gone while we looked, or not Linux


def children_cpu_seconds(pid: int) -> float:
    """CPU seconds of ``pid``'s descendants: those reaped (``cutime`` + ``cstime``, its own
    and its live descendants') plus the live ones' own (``utime`` + ``stime``). The
    server's Cypher workers are grandchildren (forked by a forkserver it started); their
    CPU is the server's too. Linux ``/proc``; 0.0 elsewhere."""
    own = _stat_fields(pid)
    if own is None:
        return 0.0
    parents: dict[int, list[list[str]]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(entry.name)
            if fields is not None:
                parents.setdefault(int(fields[1]), []).append([entry.name, *fields])
    ticks = int(own[13]) + int(own[14])
    frontier = [pid]
    while frontier:
        for child in parents.get(frontier.pop(), []):
            # child[0] is its pid, then the stat fields shifted by one.
            ticks += sum(int(child[i]) for i in (12, 13, 14, 15))
            frontier.append(int(child[0]))
    return ticks / _TICKS


def process_rss_bytes(pid: int) -> int | None:
    """Resident set size of ``pid`` now (Linux ``/proc``), ``None`` elsewhere."""
    try:
        pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * resource.getpagesize()


def direct_children(pid: int) -> list[int]:
    """The pids whose parent is ``pid`` (Linux ``/proc``; empty elsewhere)."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(entry.name)
            if fields is not None and int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


class ServeProcess:
    """``python -m nams_local.cli serve --port 0 --db DB [extra]``, up and healthy.

    Use as a context manager. ``max_rss_bytes`` arms a watchdog thread that kills the server
    when its RSS passes the bound; ``killed_for`` then says why, and requests fail fast.
    """

    def __init__(
        self,
        db: Path,
        log: Path,
        *,
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        max_rss_bytes: int | None = None,
        start_timeout: float = 120.0,
    ) -> None:
        self.db = db
        self.log = log
        self.extra_args = list(extra_args)
        self.extra_env = dict(env or {})
        self.max_rss_bytes = max_rss_bytes
        self.start_timeout = start_timeout
        #: ``serve --workers N`` (N > 1): the server's memory is its workers' too.
        self.supervised = "--workers" in self.extra_args
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.peak_rss_bytes = 0
        self.killed_for: str | None = None
        self._watching = threading.Event()
        self._watchdog: threading.Thread | None = None

    @classmethod
    def from_options(
        cls, args: argparse.Namespace, folder: Path, *, max_rss_bytes: int | None = None
    ) -> ServeProcess:
        """The server :func:`add_serve_options` describes, its database and log in ``folder``."""
        return cls(
            folder / "serve.sqlite3",
            folder / "serve.log",
            extra_args=[
                *(["--no-embeddings"] if args.no_embeddings else []),
                *(["--workers", str(args.workers)] if getattr(args, "workers", 1) > 1 else []),
            ],
            env={"NAMS_EXTRACTION": args.extraction} if args.extraction else {},
            max_rss_bytes=max_rss_bytes,
        )

    @property
    def pid(self) -> int:
        assert self.process is not None, "not started"
        return self.process.pid

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "nams_local.cli",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--db",
            str(self.db),
            *self.extra_args,
        ]

    def __enter__(self) -> ServeProcess:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                self.command(),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=child_environment(self.extra_env),
            )
        try:
            self.port = self._wait_for_banner()
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise
        if self.max_rss_bytes is not None:
            self._watching.set()
            self._watchdog = threading.Thread(target=self._watch, daemon=True)
            self._watchdog.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def _wait_for_banner(self) -> int:
        assert self.process is not None
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            match = _LISTENING.search(self.log_tail(20_000))
            if match:
                return int(match.group(1))
            if self.process.poll() is not None:
                raise RuntimeError(f"nams-local serve exited early:\n{self.log_tail()}")
            time.sleep(0.05)
        raise RuntimeError(f"nams-local serve did not announce its port:\n{self.log_tail()}")

    def _wait_healthy(self) -> None:
        assert self.process is not None
        deadline = time.monotonic() + self.start_timeout
        with httpx.Client(timeout=2.0) as client:
            while time.monotonic() < deadline:
                try:
                    if client.get(f"{self.base_url}/healthz").status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                if self.process.poll() is not None:
                    raise RuntimeError(f"nams-local serve exited early:\n{self.log_tail()}")
                time.sleep(0.05)
        raise RuntimeError(f"nams-local serve never answered /healthz:\n{self.log_tail()}")

    def _watch(self) -> None:
        while self._watching.is_set() and self.process is not None:
            if self.process.poll() is not None:
                return
            rss = self.rss_bytes()
            if rss is not None:
                self.peak_rss_bytes = max(self.peak_rss_bytes, rss)
                if self.max_rss_bytes is not None and rss > self.max_rss_bytes:
                    self.killed_for = (
                        f"server RSS {rss / 1e6:.0f} MB passed the bound "
                        f"{self.max_rss_bytes / 1e6:.0f} MB: killed by the harness"
                    )
                    self.process.kill()
                    return
            time.sleep(0.2)

    def cpu_seconds(self) -> float | None:
        return None if self.process is None else process_cpu_seconds(self.process.pid)

    def children_cpu_seconds(self) -> float | None:
        """CPU of the server's worker processes so far (``children_cpu_seconds``)."""
        return None if self.process is None else children_cpu_seconds(self.process.pid)

    def rss_bytes(self) -> int | None:
        """The server's resident size; with workers, the supervisor's plus its workers'
        (not their Cypher workers', as a single server's excludes its own)."""
        if self.process is None:
            return None
        own = process_rss_bytes(self.process.pid)
        if own is None or not self.supervised:
            return own
        return own + sum(process_rss_bytes(c) or 0 for c in direct_children(self.process.pid))

    def stop(self, timeout: float = 20.0) -> int | None:
        """SIGTERM (a graceful shutdown), then SIGKILL after ``timeout``; the exit status."""
        self._watching.clear()
        process = self.process
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        if self._watchdog is not None:
            self._watchdog.join(timeout=2)
        return process.returncode
