"""The writer lane's order: request units before background ones, workspaces in turn.

Each test holds the writer thread on a gate unit while it queues work, so the queue's
content is known when the writer picks its next group, then records the order in which
the units actually ran. The lane runs over a real SQLite connection (and, for the
store-level test, a real ``SQLiteStore``), so grouping and commits are the real ones.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine
from sqlalchemy.pool import StaticPool

from backends.sqlite.store import Ctx, SQLiteStore
from backends.sqlite.writer import BACKGROUND_MAX_WAIT, MAX_BACKGROUND_GROUP, MAX_GROUP, WriterLane

BULK = 300


@pytest.fixture
def lane() -> Iterator[WriterLane]:
    engine: Engine = create_engine("sqlite://", poolclass=StaticPool)
    writer = WriterLane("test-writer", lambda error: None)
    conn = writer.call(engine.connect).result(timeout=10)
    writer.conn = conn
    try:
        yield writer
    finally:
        writer.call(conn.close).result(timeout=10)
        writer.stop()
        engine.dispose()


@contextmanager
def gated(lane: WriterLane) -> Iterator[None]:
    """Hold the writer on a unit while the body queues work; then let it go."""
    gate, entered = threading.Event(), threading.Event()

    def hold() -> None:
        entered.set()
        assert gate.wait(timeout=30), "the test never opened the gate"

    holder = lane.unit(hold, (), {})
    assert entered.wait(timeout=30)
    try:
        yield
    finally:
        gate.set()
        holder.result(timeout=30)


def recorder(order: list[str], name: str) -> Callable[[], None]:
    def unit() -> None:
        order.append(name)

    return unit


def test_one_workspace_bulk_does_not_delay_another_workspace_write(lane: WriterLane) -> None:
    order: list[str] = []
    with gated(lane):
        bulk = [lane.unit(recorder(order, "a"), (), {}, key="a") for _ in range(BULK)]
        single = lane.unit(recorder(order, "b"), (), {}, key="b")
    single.result(timeout=30)
    for future in bulk:
        future.result(timeout=30)
    # Round-robin: B's one write is in the first group after the gate, second in turn,
    # not behind A's three hundred.
    assert order.index("b") == 1
    assert order.count("a") == BULK
    assert lane.largest_group == MAX_GROUP


def test_request_write_goes_before_queued_background_work(lane: WriterLane) -> None:
    order: list[str] = []
    with gated(lane):
        background = [
            lane.unit(recorder(order, "extract"), (), {}, key="a", background=True)
            for _ in range(50)
        ]
        request = lane.unit(recorder(order, "request"), (), {}, key="a")
    request.result(timeout=30)
    for future in background:
        future.result(timeout=30)
    # At most one (aged) background group may run first, never the whole backlog.
    assert order.index("request") <= MAX_BACKGROUND_GROUP
    assert order.count("extract") == 50


def test_background_work_is_not_starved_by_a_stream_of_requests(lane: WriterLane) -> None:
    stop = threading.Event()
    submitted: list[Future[None]] = []

    def flood() -> None:
        while not stop.is_set():
            submitted.append(lane.unit(time.sleep, (0.0005,), {}, key="busy"))
            if len(submitted) % 32 == 0:
                submitted[-32].result(timeout=30)  # keep a queue, not an unbounded one

    flooder = threading.Thread(target=flood)
    flooder.start()
    try:
        deadline = time.monotonic() + 5
        while lane.queued == 0:
            assert time.monotonic() < deadline, "the flood never queued"
            time.sleep(0.001)
        started = time.monotonic()
        lane.unit(lambda: None, (), {}, key="quiet", background=True).result(timeout=30)
        waited = time.monotonic() - started
    finally:
        stop.set()
        flooder.join(timeout=30)
    for future in submitted:
        future.result(timeout=30)
    assert waited < BACKGROUND_MAX_WAIT + 2.0  # a generous bound on a busy machine


def test_a_raw_call_runs_after_the_units_queued_before_it(lane: WriterLane) -> None:
    order: list[str] = []
    with gated(lane):
        before = [
            lane.unit(recorder(order, "before"), (), {}, key=key, background=bg)
            for key, bg in (("a", False), ("b", True), ("a", True))
        ]
        call = lane.call(recorder(order, "call"))
        after = lane.unit(recorder(order, "after"), (), {}, key="a")
    for future in [*before, call, after]:
        future.result(timeout=30)
    assert order == ["before", "before", "before", "call", "after"]


def test_store_units_are_keyed_by_their_workspace(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "keyed.db", embedder=None)
    order: list[str] = []
    gate, entered = threading.Event(), threading.Event()

    def hold(ctx: Ctx) -> None:
        entered.set()
        assert gate.wait(timeout=30)

    def record(ctx: Ctx) -> None:
        order.append(ctx.workspace)

    async def scenario() -> None:
        holder = asyncio.ensure_future(store.run(hold, Ctx(store, "a")))
        assert await asyncio.to_thread(entered.wait, 30)
        bulk = [asyncio.ensure_future(store.run(record, Ctx(store, "a"))) for _ in range(BULK)]
        deadline = time.monotonic() + 30
        while store.writer.queued < BULK:
            assert time.monotonic() < deadline, "the bulk never queued"
            await asyncio.sleep(0.005)
        single = asyncio.ensure_future(store.run(record, Ctx(store, "b")))
        while store.writer.queued < BULK + 1:
            assert time.monotonic() < deadline, "the single write never queued"
            await asyncio.sleep(0.005)
        gate.set()
        await asyncio.gather(holder, single, *bulk)

    try:
        asyncio.run(scenario())
    finally:
        store.close()
    assert order.index("b") == 1
