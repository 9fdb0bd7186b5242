"""Backpressure on deferred full-text indexing: a workspace's un-indexed text is bounded.

Deferring a big bulk's FTS entries (``deferred_fts.py``) makes its acknowledgement cheap,
so a tenant streaming bulks near the body limit could acknowledge them faster than the
writer indexes them, and its own searches would then wait for an ever longer queue (the
adversarial load did exactly that: its searches took 20-30 s). So a store counts, per
workspace, the characters it has queued and not yet indexed; past ``MAX_BACKLOG_CHARS`` the
workspace's next *big* write waits (on its event loop, never in the writer's queue) until
the backlog is below the bound again, at most ``WAIT_SECONDS``, then gets a 429. Other
workspaces are not affected; small writes never wait (they index inline).

The counts are this process's own deferrals (rows another process or a crash left are
indexed without being counted; a count never goes below zero).
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future

from nams_local.errors import TooManyRequestsError

__all__ = ["MAX_BACKLOG_CHARS", "WAIT_SECONDS", "FtsBacklog"]

#: Characters one workspace may have waiting for the full-text index before its next big
#: write waits (a quarter of a bulk near the body limit: the workspace's own searches wait
#: for at most about one bulk's indexing; at 1,000,000 they took 10-16 s on a busy box).
MAX_BACKLOG_CHARS = 256 * 1024
#: How long a big write waits for its workspace's backlog to shrink before a 429.
WAIT_SECONDS = 10.0


class FtsBacklog:
    """Un-indexed characters per workspace, with a future per workspace that resolves
    whenever its count drops (thread-safe: counted on the writer, awaited on loops)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._chars: dict[str, int] = {}
        self._dropped: dict[str, Future[None]] = {}

    def chars(self, workspace: str) -> int:
        with self._lock:
            return self._chars.get(workspace, 0)

    def add(self, workspace: str, chars: int) -> None:
        with self._lock:
            self._chars[workspace] = self._chars.get(workspace, 0) + chars

    def remove(self, workspace: str, chars: int) -> None:
        with self._lock:
            left = max(0, self._chars.get(workspace, 0) - chars)
            if left:
                self._chars[workspace] = left
            else:
                self._chars.pop(workspace, None)
            dropped = self._dropped.pop(workspace, None)
        if dropped is not None:
            dropped.set_result(None)

    def _next_drop(self, workspace: str) -> Future[None] | None:
        """A future resolved at the workspace's next drop; ``None`` if it has room."""
        with self._lock:
            if self._chars.get(workspace, 0) <= MAX_BACKLOG_CHARS:
                return None
            return self._dropped.setdefault(workspace, Future())

    async def room(self, workspace: str) -> None:
        """Wait while the workspace's backlog is over the bound; 429 after the wait."""
        dropped = self._next_drop(workspace)
        if dropped is None:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WAIT_SECONDS
        while dropped is not None:
            try:
                await asyncio.wait_for(
                    asyncio.shield(asyncio.wrap_future(dropped)), max(0.0, deadline - loop.time())
                )
            except TimeoutError:
                raise TooManyRequestsError(
                    "this workspace's big writes are ahead of its full-text index "
                    f"(more than {MAX_BACKLOG_CHARS:,} characters waiting); retry later",
                    retry_after=1.0,
                ) from None
            dropped = self._next_drop(workspace)
