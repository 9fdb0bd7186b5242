"""A cross-process write lock the kernel hands over at once: ``flock`` on ``<db>-writer.lock``.

SQLite lets one connection write at a time. A writer that finds the write lock taken does
not queue for it: its busy handler (``busy_timeout``) *sleeps* and tries again, on a
schedule of 1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100 ms. Two ``serve`` workers on one
file therefore lose most of their writer time to those sleeps: the other worker's group
commits in a few milliseconds, but the waiter wakes up 5, 10 or 25 ms later, often to find
the lock taken again, and its own group — every request write of that worker — waits.

So every writer lane of a file database takes this lock before ``BEGIN IMMEDIATE`` and
releases it after ``COMMIT``/``ROLLBACK``. Between nams-local writers the SQLite lock is
then always free when ``BEGIN IMMEDIATE`` runs, and a waiter sleeps in the kernel's
``flock`` queue, woken the moment the holder unlocks. ``busy_timeout`` stays the backstop
for writers that do not know this file (a plain ``sqlite3`` shell, an older nams-local).
SQLite's lock stays the one that guarantees correctness; this one only decides who goes
next, so anything going wrong with it (no ``fcntl``, an unwritable directory, the lock file
deleted) degrades to the sleeping schedule, never to two writers at once.

Decided:

* **Local files only**, as SQLite's WAL mode already requires (its shared memory does not
  work over NFS either): ``flock`` over NFS may be emulated with byte-range locks or not
  work at all; the WAL mode is the actual limit.
* **A killed holder** (``kill -9`` while it holds the lock) releases it: the kernel drops a
  process's ``flock`` locks when its last descriptor closes at exit. The next writer goes on
  at once; SQLite rolls the dead writer's transaction back from the WAL as always.
* **Bounded wait.** ``flock`` itself cannot time out, and a holder may be stopped
  (``SIGSTOP``, a debugger) or busy in a long transaction. The blocking wait therefore runs
  on a small helper thread while the writer waits at most ``LOCK_WAIT`` seconds for it; past
  that the writer goes on without the lock into ``BEGIN IMMEDIATE`` and its own
  ``busy_timeout`` (then a 503 as before). A lock the helper obtains after the writer gave
  up is released at once. Uncontended, the writer takes the lock itself (``LOCK_NB``): no
  thread hop, one system call.
* **Fairness.** ``flock`` is not FIFO: the kernel wakes the waiters when the holder
  unlocks, and whoever calls ``flock`` first wins, so a writer whose next group is ready
  at once may take the lock again before the woken waiter runs. Each group is short and
  the woken waiter is usually running before the holder's next group is ready (its event
  loop must first resolve the futures and queue new units), so the two writers alternate;
  ``docs/sharing-a-file.md`` has the split measured between two workers. No turn-taking
  protocol on top (a second lock the waiters hold) was needed for that.
* **Permissions.** The lock file is created with the database file's permission bits (so
  a database shared by a group has a lock file the group can open). One that cannot be
  opened for writing is opened read-only (``flock`` needs no write access); one that cannot
  be opened at all means no lock, with one warning.
* **The deleted-file check** (``file_identity.py``) looks at the database file only: the
  lock file never makes a deleted database look alive, and nothing here creates the
  database. A lock file deleted or replaced under a running store is noticed after
  acquiring (its descriptor no longer names the file at the path) and opened again, so two
  writers never believe they take turns on two different files for long.
* ``NAMS_WRITER_LOCK=off`` turns it off (a diagnostic, and how the tests show the sleeping
  schedule it replaces).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: the busy handler alone
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOCK_ENV", "LOCK_SUFFIX", "LOCK_WAIT", "LockStats", "WriterFileLock", "open_write_lock"]

log = logging.getLogger("nams_local.sqlite")

#: The lock file's name is the database file's plus this.
LOCK_SUFFIX = "-writer.lock"
#: How long (seconds) a writer waits for the lock before going on without it (then SQLite's
#: own ``busy_timeout`` applies).
LOCK_WAIT = 5.0
#: ``off`` disables the lock (diagnostics, tests of the schedule it replaces).
LOCK_ENV = "NAMS_WRITER_LOCK"


class LockStats:
    """What taking the lock cost (read by tests and benchmarks; written by the writer)."""

    def __init__(self) -> None:
        #: Acquisitions, and how many had to wait for another process.
        self.acquired = 0
        self.contended = 0
        #: Seconds spent waiting in all, and the longest single wait.
        self.wait_seconds = 0.0
        self.longest_wait = 0.0
        #: Waits that gave up after ``LOCK_WAIT`` (the writer went on without the lock).
        self.gave_up = 0
        #: Transactions begun, the seconds their ``BEGIN IMMEDIATE`` took in all (SQLite's
        #: busy handler sleeping there when another writer holds the file), the longest.
        self.begins = 0
        self.begin_seconds = 0.0
        self.longest_begin = 0.0

    def began(self, seconds: float) -> None:
        self.begins += 1
        self.begin_seconds += seconds
        self.longest_begin = max(self.longest_begin, seconds)

    def as_dict(self) -> dict[str, float]:
        """The figures by name (the writer trace's last line, the tests' racers)."""
        return dict(vars(self))


class WriterFileLock:
    """The ``flock`` of one store's writer on ``<db>-writer.lock`` (module docstring)."""

    def __init__(self, db_path: str | Path, *, wait: float = LOCK_WAIT) -> None:
        self.path = os.path.abspath(Path(db_path).expanduser()) + LOCK_SUFFIX
        self.wait = wait
        self.stats = LockStats()
        self._mode = _mode_of(Path(db_path).expanduser())
        self._fd = -1
        self._held = False
        self._cond = threading.Condition()
        #: The helper thread is blocked in ``flock`` for the writer (or will be).
        self._wanted = False
        #: The helper obtained the lock for the writer that asked.
        self._granted = False
        self._closing = False
        #: The helper is inside a blocking ``flock`` (it uses the descriptor).
        self._blocked = False
        #: ``flock`` failed (not supported here): never tried again.
        self._broken = False
        self._helper: threading.Thread | None = None
        self._open()

    def _open(self) -> None:
        try:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, self._mode)
        except PermissionError:
            self._fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)

    # -- the writer's side ------------------------------------------------------------
    def acquire(self) -> bool:
        """Take the lock (``True``), or give up after ``wait`` seconds (``False``: go on
        under SQLite's busy handler). Only the writer thread calls it."""
        assert fcntl is not None and not self._held
        for _ in range(3):  # a lock file replaced under us: reopen, at most twice
            if self._fd < 0:
                return False  # it could not be reopened: no lock from now on
            if not self._take():
                return False
            if self._still_at_path():
                self._held = True
                return True
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            self._reopen()
        return False

    def release(self) -> None:
        """Let the next writer go (after COMMIT or ROLLBACK)."""
        if self._held:
            assert fcntl is not None
            self._held = False
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        """Release and close the file; the helper thread, if started, ends."""
        self.release()
        with self._cond:
            self._closing = True
            self._cond.notify_all()
            helper, blocked = self._helper, self._blocked
        if blocked:  # behind a stuck holder: the descriptor stays open with the helper
            log.warning("the writer lock's helper is still waiting; leaving its file open")
            return
        if helper is not None:
            helper.join()  # idle: it ends at once
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def _take(self) -> bool:
        assert fcntl is not None
        with self._cond:
            if self._broken:
                return False
            # The helper still blocked from a turn the writer gave up: it holds the place
            # in the kernel's queue (and a non-blocking try on the same descriptor could
            # "succeed" just before the helper lets go of what it got).
            helper_waits = self._blocked
        if not helper_waits:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pass
            except OSError as error:  # e.g. ENOLCK on a file system without flock
                self._break(error)
                return False
            else:
                self.stats.acquired += 1
                return True
        started = time.perf_counter()
        got = self._wait_for_helper()
        waited = time.perf_counter() - started
        stats = self.stats
        stats.contended += 1
        stats.wait_seconds += waited
        stats.longest_wait = max(stats.longest_wait, waited)
        if got:
            stats.acquired += 1
        else:
            stats.gave_up += 1
            log.warning(
                "waited %.1f s for the writer lock %s; going on under SQLite's busy handler",
                waited,
                self.path,
            )
        return got

    def _wait_for_helper(self) -> bool:
        deadline = time.monotonic() + self.wait
        with self._cond:
            if self._helper is None:
                self._helper = threading.Thread(
                    target=self._help, name="nams-sqlite-writer-lock", daemon=True
                )
                self._helper.start()
            self._wanted = True
            self._cond.notify_all()
            while not self._granted:
                left = deadline - time.monotonic()
                if left <= 0 or self._broken:
                    self._wanted = False  # the helper releases what it gets from now on
                    return False
                self._cond.wait(left)
            self._granted = False
            return True

    def _help(self) -> None:
        """The helper thread: block in ``flock`` whenever the writer asks for the lock."""
        assert fcntl is not None
        while True:
            with self._cond:
                while not (self._wanted or self._closing):
                    self._cond.wait()
                if self._closing:
                    return
                self._blocked = True
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX)
            except OSError as error:
                with self._cond:
                    self._blocked = False
                self._break(error)
                return
            with self._cond:
                self._blocked = False
                if self._wanted and not self._closing:
                    self._wanted = False
                    self._granted = True
                    self._cond.notify_all()
                    continue
            fcntl.flock(self._fd, fcntl.LOCK_UN)  # the writer gave up meanwhile

    def _break(self, error: OSError) -> None:
        """``flock`` itself failed: no lock from now on (SQLite's busy handler alone)."""
        with self._cond:
            already, self._broken = self._broken, True
            self._cond.notify_all()
        if not already:
            log.warning(
                "the writer lock %s cannot be taken (%s); writers take turns by SQLite's busy "
                "handler alone",
                self.path,
                error.strerror or error,
            )

    def _still_at_path(self) -> bool:
        try:
            here = os.stat(self.path)
        except OSError:
            return False
        mine = os.fstat(self._fd)
        return (here.st_dev, here.st_ino) == (mine.st_dev, mine.st_ino)

    def _reopen(self) -> None:
        with self._cond:
            if self._blocked:
                return  # the helper is using the descriptor: keep it
            os.close(self._fd)
            self._fd = -1
            try:
                self._open()
            except OSError as error:  # the fd stays -1: no lock from now on
                log.warning("cannot reopen the writer lock %s: %s", self.path, error)


def _mode_of(db: Path) -> int:
    """The permission bits for a new lock file: the database file's (read/write bits)."""
    try:
        return db.stat().st_mode & 0o666
    except OSError:
        return 0o644


def open_write_lock(db_path: str) -> WriterFileLock | None:
    """The writer lock of a file database, or ``None``: ``:memory:``, no ``fcntl``,
    ``NAMS_WRITER_LOCK=off``, or a lock file that cannot be opened (one warning)."""
    if db_path == ":memory:" or fcntl is None:
        return None
    if os.environ.get(LOCK_ENV, "").strip().lower() in ("off", "0", "no", "false"):
        return None
    try:
        return WriterFileLock(db_path, wait=LOCK_WAIT)
    except OSError as error:
        log.warning(
            "cannot open the writer lock beside %s (%s); writers take turns by SQLite's busy "
            "handler alone",
            db_path,
            error.strerror or error,
        )
        return None
