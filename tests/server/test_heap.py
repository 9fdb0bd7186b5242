"""``serve`` sets its start-up heap aside from the garbage collector (``heap.settle``)."""

from __future__ import annotations

import asyncio
import gc
import socket
import weakref
from collections.abc import Iterator

import pytest
import uvicorn
from starlette.types import Receive, Scope, Send

from nams_local.server import heap
from nams_local.server.ready import ReadyServer


@pytest.fixture(autouse=True)
def _thawed() -> Iterator[None]:
    """Each test starts and ends with nothing frozen (the pytest process is shared)."""
    gc.unfreeze()
    yield
    gc.unfreeze()


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def test_settle_freezes_what_lives_and_collects_the_garbage_first() -> None:
    alive = [{"n": i} for i in range(50_000)]
    a, b = _Node(), _Node()
    a.other, b.other = b, a  # a cycle only the collector can free
    gone = weakref.ref(a)
    del a, b
    frozen = heap.settle()
    assert gone() is None, "the garbage was frozen instead of collected"
    assert frozen >= len(alive)  # (objects freed by other threads leave it at once)
    # A full collection now walks only what was made since: none of the 50,000.
    assert len(gc.get_objects(generation=2)) < len(alive) // 10


async def _app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})


async def test_serve_settles_its_heap_before_it_says_it_is_ready() -> None:
    """A real uvicorn server on loopback: by the time it says it is ready (the banner, the
    ready file), its start-up heap is frozen."""
    seen: list[int] = []
    ready = asyncio.Event()

    def on_ready() -> None:
        seen.append(gc.get_freeze_count())
        ready.set()

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        config = uvicorn.Config(_app, log_level="warning", lifespan="on")
        server = ReadyServer(config, on_ready=on_ready)
        assert gc.get_freeze_count() == 0
        serving = asyncio.create_task(server.serve(sockets=[sock]))
        try:
            await asyncio.wait_for(ready.wait(), timeout=30)
        finally:
            server.should_exit = True
            await asyncio.wait_for(serving, timeout=30)
    assert len(seen) == 1
    assert seen[0] > 0
