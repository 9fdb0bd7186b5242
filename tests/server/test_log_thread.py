"""``serve``'s log lines are written off the event loop, all of them, in order.

(``test_serve_cli`` reads the access lines of a real ``serve`` from its stderr.)
"""

from __future__ import annotations

import io
import logging
import threading

from nams_local.server.log_thread import log_thread


class _Recording(io.StringIO):
    """A stream that remembers which threads wrote to it."""

    def __init__(self) -> None:
        super().__init__()
        self.writers: set[str] = set()

    def write(self, text: str) -> int:
        self.writers.add(threading.current_thread().name)
        return super().write(text)


def test_lines_are_written_by_another_thread_in_order_and_handlers_come_back() -> None:
    log = logging.getLogger("nams_local.test_log_thread")
    stream = _Recording()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    try:
        with log_thread(log.name):
            assert handler not in log.handlers
            for i in range(200):
                log.info("line %d of %s", i, "two hundred")
            log.debug("not at this level")
        # Leaving the block waited for the queue: every line is there, in order.
        assert stream.getvalue().splitlines() == [
            f"INFO line {i} of two hundred" for i in range(200)
        ]
        assert threading.current_thread().name not in stream.writers
        assert log.handlers == [handler]
    finally:
        log.removeHandler(handler)


def test_a_logger_without_handlers_is_left_alone() -> None:
    log = logging.getLogger("nams_local.test_log_thread.bare")
    with log_thread(log.name):
        assert log.handlers == []
    assert log.handlers == []
