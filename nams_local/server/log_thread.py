"""The server's log lines are written by a thread of their own, not by the event loop.

Every request logs one access line. Written inline, the line is formatted on the event
loop and then a ``write`` to stderr releases the GIL; getting it back means waiting for
whichever writer, reader or extraction thread holds it (up to ``sys.getswitchinterval()``,
5 ms), and every other request on the loop waits with it. Under issue 12's load the
profile showed the loop parked in that write for a fifth of its wall time. Here the loop
only puts the record on a queue; a listener thread formats and writes it, in order.
Records are handed over as they are (``_Handoff.prepare``): their arguments are the
server's own immutable values, so formatting later gives the same line.
"""

from __future__ import annotations

import logging
import queue
from collections.abc import Iterator
from contextlib import contextmanager
from logging.handlers import QueueHandler, QueueListener

__all__ = ["log_thread"]


class _Handoff(QueueHandler):
    """A ``QueueHandler`` that leaves all formatting to the listener's handlers."""

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        return record


@contextmanager
def log_thread(name: str = "nams_local.server") -> Iterator[None]:
    """While inside, ``name``'s handlers run on a listener thread (restored on exit, after
    every queued line is written)."""
    log = logging.getLogger(name)
    handlers = list(log.handlers)
    if not handlers:
        yield
        return
    records: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
    listener = QueueListener(records, *handlers, respect_handler_level=True)
    handoff = _Handoff(records)
    for handler in handlers:
        log.removeHandler(handler)
    log.addHandler(handoff)
    listener.start()
    try:
        yield
    finally:
        log.removeHandler(handoff)
        listener.stop()  # writes what is queued, then joins the thread
        for handler in handlers:
            log.addHandler(handler)
