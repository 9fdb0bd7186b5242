"""A one-line progress display for long commands (export, import), on a terminal only.

Redrawn in place with ``\\r`` at most a few times a second, and only when stderr is a
terminal: a pipe or a log file gets nothing (a script reads the command's report, not
a stream of carriage returns).
"""

from __future__ import annotations

import sys
import time
from typing import IO

__all__ = ["Progress"]

#: Seconds between redraws.
_EVERY = 0.2


class Progress:
    """``update(done)`` redraws "label: done unit (rate/s)", with a percentage of
    ``total`` when known; ``close()`` ends the line."""

    def __init__(
        self, label: str, unit: str, *, total: int | None = None, stream: IO[str] | None = None
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty()
        self.label = label
        self.unit = unit
        self.total = total
        self.start = time.monotonic()
        self.last = 0.0
        self.drawn = False

    def update(self, done: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.last < _EVERY:
            return
        self.last = now
        rate = done / max(now - self.start, 1e-9)
        share = f" {done * 100 // self.total}%" if self.total else ""
        self.stream.write(f"\r{self.label}:{share} {done} {self.unit} ({rate:,.0f}/s)  ")
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()
