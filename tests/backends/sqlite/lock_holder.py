"""Another nams-local writer of the same file, reduced to its lock:
``python -m tests.backends.sqlite.lock_holder <db> <hold_ms> <gap_ms> <seconds>``.

It takes turns the way a store's writer does (``write_lock.WriterFileLock``, then
``BEGIN IMMEDIATE``), holds SQLite's write lock ``hold_ms`` per transaction, lets go for
``gap_ms`` and takes it again, for ``seconds``; ``hold_ms`` < 0 means: take it once and
keep it until killed. It prints ``held`` once it first holds the lock and, when it ends,
the number of transactions it committed.
"""

from __future__ import annotations

import sys
import time

import sqlean.dbapi2 as sqlean  # the engine's library

from backends.sqlite.write_lock import WriterFileLock


def main(db: str, hold_ms: float, gap_ms: float, seconds: float) -> int:
    conn = sqlean.connect(db, timeout=30, isolation_level=None)
    lock = WriterFileLock(db)
    conn.execute("CREATE TABLE IF NOT EXISTS holder_turns (at REAL)")
    announced = False
    committed = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not lock.acquire():
            raise SystemExit("the lock holder could not take the lock")
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO holder_turns VALUES (?)", (time.time(),))
        if not announced:
            print("held", flush=True)
            announced = True
        if hold_ms < 0:
            time.sleep(3600)  # until killed
        time.sleep(hold_ms / 1000)
        conn.execute("COMMIT")
        lock.release()
        committed += 1
        time.sleep(gap_ms / 1000)
    lock.close()
    conn.close()
    print(committed, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])))
