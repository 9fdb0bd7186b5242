"""Is the database file at the store's path still the file the store opened?

SQLite keeps writing into a file that was deleted (or renamed away and replaced) under a
running process: the open descriptors still point at the old inode, so writes are
acknowledged into a file nobody will ever open again, while a connection opened later (a
reader thread's) creates or opens whatever is at the path now. A store therefore records
the identity of its file — ``(st_dev, st_ino)`` — when it opens, and compares it with
``os.stat(path)`` before every unit of work and before every commit of a write.

The inode cannot be reused for another file while the store holds it open (the writer's
connection keeps it alive), so an equal identity means the same file. One ``stat`` costs
a microsecond or two. Once the file is found gone or replaced the store stays failed
(``BackendUnavailableError``, 503 on the server): it reopens only by being restarted.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from nams_local.errors import BackendUnavailableError

__all__ = ["FileIdentity"]


class FileIdentity:
    """The ``(device, inode)`` of a database file, checked against its path on demand."""

    def __init__(self, path: str | Path) -> None:
        # Absolute, as SQLite opened it: a later chdir must not look like a deleted file.
        self.path = os.path.abspath(Path(path).expanduser())
        st = os.stat(self.path)
        self._identity = (st.st_dev, st.st_ino)
        self._failure: str | None = None
        self._lock = threading.Lock()

    def check(self) -> None:
        """Raise ``BackendUnavailableError`` unless the path still names the opened file."""
        if self._failure is None:
            try:
                st = os.stat(self.path)
            except FileNotFoundError:
                self._fail("was deleted")
            except OSError as exc:
                self._fail(f"cannot be checked ({exc.strerror})")
            else:
                if (st.st_dev, st.st_ino) != self._identity:
                    self._fail("was replaced by another file")
        if self._failure is not None:
            raise BackendUnavailableError(self._failure)

    def _fail(self, what: str) -> None:
        with self._lock:
            if self._failure is None:
                self._failure = (
                    f"the database file {self.path} {what} while the store had it open; "
                    "nothing more is read from or written to it (restart the store to "
                    "open the file now at that path)"
                )

    @property
    def failed(self) -> bool:
        return self._failure is not None
