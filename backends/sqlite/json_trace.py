"""A debugging trace: one JSON line per event, appended to a file an environment variable names.

The writer (``writer_stats``, ``NAMS_WRITER_TRACE``) and the model threads
(``embedding_stats``, ``NAMS_EMBED_TRACE``) can be profiled from outside a ``serve``
process this way: a benchmark harness cannot read the server's memory. A trace is off
unless its variable is set, and never fails the work it records: a file that cannot be
opened or written is dropped with one warning.
"""

from __future__ import annotations

import json
import logging
import os
from typing import IO, Any

__all__ = ["JsonTrace"]

log = logging.getLogger("nams_local.sqlite")


class JsonTrace:
    """Appends JSON lines to the file ``os.environ[variable]`` names (nothing when unset)."""

    def __init__(self, variable: str) -> None:
        self.variable = variable
        self._file: IO[str] | None = None
        path = os.environ.get(variable)
        if path:
            # ``{pid}`` in the path: one trace per process (``serve --workers N``).
            path = path.replace("{pid}", str(os.getpid()))
            try:
                self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()
            except OSError as error:
                log.warning("cannot open the trace %s=%s: %r", variable, path, error)

    @property
    def on(self) -> bool:
        return self._file is not None

    def write(self, line: dict[str, Any]) -> None:
        trace = self._file
        if trace is None:
            return
        try:
            trace.write(json.dumps(line) + "\n")
            trace.flush()
        except (OSError, ValueError) as error:
            log.warning("the trace %s failed, dropping it: %r", self.variable, error)
            self._file = None

    def close(self) -> None:
        trace, self._file = self._file, None
        if trace is not None:
            trace.close()
