"""What each writer group held the writer for: durations and CPU, by priority and workspace.

Another tenant's write waits for the writer group that is running when it arrives, so the
figure that decides the adversarial latency is not the writer's throughput but how long one
group holds the writer and whose units were in it. The writer lane records every group here
(a few counters, no allocation per group beyond the per-workspace sums), so tests and
benchmarks can say "a hostile bulk held the writer for N ms" in writer time rather than in
wall-clock latency, which a busy machine turns into noise.

``NAMS_WRITER_TRACE=/path`` additionally appends one JSON line per group to that file (for
profiling a ``serve`` process from outside: the benchmark harness cannot read its memory).
It is a debugging aid, off by default, and never fails a write: a trace that cannot be
written is dropped with one warning.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import dataclass, field
from typing import IO

__all__ = ["TRACE_ENV", "GroupStats", "PriorityStats"]

log = logging.getLogger("nams_local.sqlite")

#: The environment variable naming a file to append one JSON line per writer group to.
TRACE_ENV = "NAMS_WRITER_TRACE"


@dataclass
class PriorityStats:
    """Groups of one priority: how many, their writer time and CPU (seconds), the longest."""

    groups: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    longest: float = 0.0
    #: The cost and workspaces of the longest group (what held the writer longest).
    longest_cost: int = 0
    longest_keys: tuple[str, ...] = ()


@dataclass
class GroupStats:
    """Writer groups recorded by one lane (read from any thread; written by the writer)."""

    request: PriorityStats = field(default_factory=PriorityStats)
    background: PriorityStats = field(default_factory=PriorityStats)
    #: Writer seconds spent on each workspace's units (a group's time split by cost).
    by_key: dict[str, float] = field(default_factory=dict)
    _trace: IO[str] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def from_environment(cls) -> GroupStats:
        stats = cls()
        path = os.environ.get(TRACE_ENV)
        if path:
            # ``{pid}`` in the path: one trace per process (``serve --workers N``).
            path = path.replace("{pid}", str(os.getpid()))
            try:
                stats._trace = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()
            except OSError as error:
                log.warning("cannot open the writer trace %s: %r", path, error)
        return stats

    def record(
        self,
        background: bool,
        keys: list[str],
        costs: list[int],
        seconds: float,
        cpu_seconds: float,
    ) -> None:
        """One group ran: its units' workspaces and costs, its writer time and CPU."""
        stats = self.background if background else self.request
        total = sum(costs) or 1
        with self._lock:
            stats.groups += 1
            stats.seconds += seconds
            stats.cpu_seconds += cpu_seconds
            if seconds > stats.longest:
                stats.longest = seconds
                stats.longest_cost = total
                stats.longest_keys = tuple(dict.fromkeys(keys))
            for key, cost in zip(keys, costs, strict=True):
                self.by_key[key] = self.by_key.get(key, 0.0) + seconds * cost / total
        trace = self._trace
        if trace is not None:
            line = {
                "background": background,
                "units": len(keys),
                "cost": total,
                "keys": sorted(set(keys)),
                "ms": round(seconds * 1000, 3),
                "cpu_ms": round(cpu_seconds * 1000, 3),
            }
            try:
                trace.write(json.dumps(line) + "\n")
            except (OSError, ValueError) as error:
                log.warning("the writer trace failed, dropping it: %r", error)
                self._trace = None

    def note(self, line: dict[str, object]) -> None:
        """Append one more JSON line to the trace, if there is one (the lane's totals at
        its end: lock waits, the process's CPU)."""
        trace = self._trace
        if trace is not None:
            try:
                trace.write(json.dumps(line) + "\n")
            except (OSError, ValueError) as error:
                log.warning("the writer trace failed, dropping it: %r", error)
                self._trace = None

    def close(self) -> None:
        trace, self._trace = self._trace, None
        if trace is not None:
            trace.close()
