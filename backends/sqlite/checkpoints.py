"""WAL checkpoints run by the writer after it has let the next writer go, not inside COMMIT.

SQLite's automatic checkpoint (``wal_autocheckpoint``, every 1,000 WAL pages) runs in the
COMMIT call of whichever connection crosses the threshold: it copies the WAL back into the
database file and syncs it (about 15 ms per 1,000 pages on a busy disk, measured; 40 ms
for 3,000). SQLite's write lock is already free by then, but the writer lock between
processes (``write_lock.py``) is released only once COMMIT returns — so another process's
writer would wait for the checkpoint too. A store that takes the writer lock therefore
turns the automatic checkpoint off on its writer connection and runs a ``PASSIVE``
checkpoint itself, after releasing the lock: every ``EVERY_COMMITS`` commits or
``EVERY_SECONDS`` seconds, whichever comes first (a ``PASSIVE`` checkpoint takes no write
lock and waits for nobody: the other process keeps writing meanwhile; what it cannot copy
because of readers is copied by a later one, as with the automatic checkpoint).

The WAL grows by at most what ``EVERY_COMMITS`` commits or one second of commits write
before the next checkpoint; ``purge`` still truncates it (``purge.py``).
"""

from __future__ import annotations

import logging
import time
from typing import Any

__all__ = ["EVERY_COMMITS", "EVERY_SECONDS", "Checkpoints"]

log = logging.getLogger("nams_local.sqlite")

#: A checkpoint after this many commits at most...
EVERY_COMMITS = 256
#: ... or once this many seconds have passed since the last one, at the next commit.
EVERY_SECONDS = 1.0


class Checkpoints:
    """The writer's own checkpoint schedule (module docstring); writer thread only."""

    def __init__(self) -> None:
        self._commits = 0
        self._last = time.monotonic()
        #: Checkpoints run, their seconds in all, and the WAL frames they copied.
        self.runs = 0
        self.seconds = 0.0
        self.frames = 0

    def take_over(self, raw: Any) -> None:
        """Turn SQLite's automatic checkpoint off on the writer's DB-API connection."""
        raw.execute("PRAGMA wal_autocheckpoint=0")

    def committed(self, raw: Any) -> None:
        """A write transaction committed and the writer lock is released: checkpoint when
        it is time."""
        self._commits += 1
        now = time.monotonic()
        if self._commits < EVERY_COMMITS and now - self._last < EVERY_SECONDS:
            return
        self._commits = 0
        self._last = now
        try:
            _busy, _log, copied = raw.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except Exception as error:  # a checkpoint is housekeeping: never fail a write
            log.warning("a WAL checkpoint failed: %r", error)
            return
        self.runs += 1
        self.seconds += time.monotonic() - now
        self.frames += max(0, int(copied))

    def as_dict(self) -> dict[str, float]:
        return {
            "checkpoints": self.runs,
            "checkpoint_seconds": self.seconds,
            "checkpoint_frames": self.frames,
        }
