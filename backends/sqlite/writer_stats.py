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

import threading
from dataclasses import dataclass, field

from .json_trace import JsonTrace

__all__ = ["TRACE_ENV", "GroupStats", "PriorityStats"]

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
    _trace: JsonTrace | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def from_environment(cls) -> GroupStats:
        return cls(_trace=JsonTrace(TRACE_ENV))

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
        if self._trace is not None and self._trace.on:
            self._trace.write(
                {
                    "background": background,
                    "units": len(keys),
                    "cost": total,
                    "keys": sorted(set(keys)),
                    "ms": round(seconds * 1000, 3),
                    "cpu_ms": round(cpu_seconds * 1000, 3),
                }
            )

    def note(self, line: dict[str, object]) -> None:
        """Append one more JSON line to the trace, if there is one (the lane's totals at
        its end: lock waits, the process's CPU)."""
        if self._trace is not None:
            self._trace.write(line)

    def close(self) -> None:
        trace, self._trace = self._trace, None
        if trace is not None:
            trace.close()
