"""Running async memory work from synchronous code.

Sync callers (a sync OpenAI client, a script) cannot await, and their thread may already
host an event loop. A ``BackgroundLoop`` owns one event loop on a daemon thread; every
coroutine of one wrapped client runs there, so an async backend (whose HTTP client or
executor is bound to one loop) always sees the same loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

__all__ = ["BackgroundLoop", "SyncChatModel", "shared_loop"]

T = TypeVar("T")


class BackgroundLoop:
    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="nams-local-loop", daemon=True
        )
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the background loop and wait for its result."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("BackgroundLoop.run called from its own loop thread")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)


_shared: BackgroundLoop | None = None
_shared_lock = threading.Lock()


def shared_loop() -> BackgroundLoop:
    """The process-wide background loop (created on first use)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = BackgroundLoop()
        return _shared


class SyncChatModel:
    """A blocking facade over any async ``ChatModel`` (for example a memory-wrapped one).

    ``generate`` returns the ``ChatResponse``; ``stream`` is a plain iterator of chunks.
    All calls of one facade run on one background loop, in order.
    """

    def __init__(self, model: Any, loop: BackgroundLoop | None = None) -> None:
        self.model = model
        self._loop = loop or shared_loop()

    def generate(self, messages: Any, **kwargs: Any) -> Any:
        return self._loop.run(self.model.generate(messages, **kwargs))

    def stream(self, messages: Any, **kwargs: Any) -> Iterator[Any]:
        iterator = self.model.stream(messages, **kwargs)
        finished = False
        try:
            while True:
                try:
                    chunk = self._loop.run(_next(iterator))
                except StopAsyncIteration:
                    finished = True
                    return
                yield chunk
        finally:
            if not finished:
                self._loop.run(iterator.aclose())


async def _next(iterator: Any) -> Any:
    return await iterator.__anext__()
