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

from backends.sqlite import store as store_module
from backends.sqlite.store import Ctx, SQLiteStore
from backends.sqlite.writer import (
    BACKGROUND_MAX_WAIT,
    GROUP_COST,
    MAX_BACKGROUND_GROUP,
    MAX_GROUP,
    MAX_QUEUED_UNITS,
    WriterLane,
    text_cost,
)
from nams_local.errors import TooManyRequestsError

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


class StoreUnits:
    """Units of work for a real store: one holds the writer until ``gate`` is set, the
    other records the workspace it ran for."""

    def __init__(self) -> None:
        self.gate, self.entered = threading.Event(), threading.Event()
        self.written: list[str] = []

    def hold(self, ctx: Ctx) -> None:
        self.entered.set()
        assert self.gate.wait(timeout=30)

    def record(self, ctx: Ctx) -> None:
        self.written.append(ctx.workspace)

    async def hold_writer(self, store: SQLiteStore) -> asyncio.Future[None]:
        """Start the holding unit and return once the writer runs it."""
        holder = asyncio.ensure_future(store.run(self.hold, Ctx(store, "a")))
        assert await asyncio.to_thread(self.entered.wait, 30)
        return holder


def test_store_units_are_keyed_by_their_workspace(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "keyed.db", embedder=None)
    units = StoreUnits()
    order, gate, record = units.written, units.gate, units.record

    async def scenario() -> None:
        holder = await units.hold_writer(store)
        bulk = [asyncio.ensure_future(store.run(record, Ctx(store, "a"))) for _ in range(BULK)]
        deadline = time.monotonic() + 30
        # A's queue on the writer is capped: the rest of its bulk waits for room.
        while store.writer.queued < MAX_QUEUED_UNITS:
            assert time.monotonic() < deadline, "the bulk never queued"
            await asyncio.sleep(0.005)
        single = asyncio.ensure_future(store.run(record, Ctx(store, "b")))
        while store.writer.queued < MAX_QUEUED_UNITS + 1:
            assert time.monotonic() < deadline, "the single write never queued"
            await asyncio.sleep(0.005)
        for _ in range(20):  # every task of the bulk gets to its first wait
            await asyncio.sleep(0)
        assert store.writer.queued == MAX_QUEUED_UNITS + 1
        gate.set()
        await asyncio.gather(holder, single, *bulk)

    try:
        asyncio.run(scenario())
    finally:
        store.close()
    assert order.index("b") == 1


def counted(lane: WriterLane, order: list[tuple[str, int]], name: str) -> Callable[[], None]:
    """A unit that records its name and the commit (group) it ran in."""

    def unit() -> None:
        order.append((name, lane.commits))

    return unit


def test_a_heavy_unit_runs_in_a_group_of_its_own(lane: WriterLane) -> None:
    order: list[tuple[str, int]] = []
    heavy_cost = GROUP_COST * 2
    with gated(lane):
        futures = [lane.unit(counted(lane, order, "bulk"), (), {}, key="a", cost=heavy_cost)]
        futures += [lane.unit(counted(lane, order, "b"), (), {}, key="b") for _ in range(3)]
        futures += [lane.unit(counted(lane, order, "c"), (), {}, key="c") for _ in range(3)]
    for future in futures:
        future.result(timeout=30)
    groups: dict[str, set[int]] = {}
    for name, commit in order:
        groups.setdefault(name, set()).add(commit)
    assert order[0][0] == "bulk"  # first in the rotation, so it opens the first group
    # The light units are not committed with it (they would have waited for it)...
    assert groups["bulk"].isdisjoint(groups["b"] | groups["c"])
    # ...and share one group among themselves.
    assert len(groups["b"] | groups["c"]) == 1


def test_light_units_are_not_held_back_by_a_heavy_one_queued_before_them(
    lane: WriterLane,
) -> None:
    order: list[tuple[str, int]] = []
    with gated(lane):
        futures = [lane.unit(counted(lane, order, "b"), (), {}, key="b")]
        futures.append(
            lane.unit(counted(lane, order, "bulk"), (), {}, key="a", cost=GROUP_COST * 2)
        )
        futures += [lane.unit(counted(lane, order, "b"), (), {}, key="b") for _ in range(3)]
    for future in futures:
        future.result(timeout=30)
    # The heavy unit does not fit after the first light one: every light unit goes in the
    # first group, the heavy one opens the next.
    assert [name for name, _ in order] == ["b", "b", "b", "b", "bulk"]
    assert len({commit for name, commit in order if name == "b"}) == 1
    assert order[-1][1] == order[0][1] + 1


def test_text_cost_counts_items_and_text() -> None:
    assert text_cost(10) == 1
    assert text_cost(0, items=0) == 1
    assert text_cost(100 * 9_000, items=100) > GROUP_COST
    assert text_cost(4096 * 3, items=2) == 5


def test_a_workspace_whose_writer_queue_is_full_gets_429_when_no_room_comes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "WRITE_ROOM_WAIT", 0.3)
    store = SQLiteStore(tmp_path / "capped.db", embedder=None)
    units = StoreUnits()
    written, gate, record = units.written, units.gate, units.record

    async def scenario() -> None:
        holder = await units.hold_writer(store)
        queued = [store.run(record, Ctx(store, "a")) for _ in range(MAX_QUEUED_UNITS)]
        tasks = [asyncio.ensure_future(job) for job in queued]
        deadline = time.monotonic() + 30
        while store.writer.queued < MAX_QUEUED_UNITS:
            assert time.monotonic() < deadline, "the queue never filled"
            await asyncio.sleep(0.005)
        with pytest.raises(TooManyRequestsError) as refused:
            await store.run(record, Ctx(store, "a"))
        assert refused.value.retry_after is not None
        assert "queued" in refused.value.message
        # Another workspace still gets in at once.
        other = asyncio.ensure_future(store.run(record, Ctx(store, "b")))
        while store.writer.queued < MAX_QUEUED_UNITS + 1:
            assert time.monotonic() < deadline, "the other workspace's write never queued"
            await asyncio.sleep(0.005)
        gate.set()
        await asyncio.gather(holder, other, *tasks)

    try:
        asyncio.run(scenario())
    finally:
        store.close()
    assert written.count("a") == MAX_QUEUED_UNITS  # the refused write wrote nothing
    assert written.index("b") == 1


def test_an_aged_background_backlog_lets_requests_in_after_each_unit(lane: WriterLane) -> None:
    """However much background work has aged, a request group runs after each aged unit:
    the backlog does not run group after group while request writes wait."""
    order: list[str] = []
    with gated(lane):
        background = [
            lane.unit(recorder(order, "extract"), (), {}, key="a", background=True)
            for _ in range(20)
        ]
        queued = time.monotonic()
        # The backlog must be aged when the writer next picks (a time-based rule).
        while time.monotonic() - queued < BACKGROUND_MAX_WAIT * 1.5:
            time.sleep(0.01)
        requests = [lane.unit(recorder(order, f"request-{i}"), (), {}, key="b") for i in range(3)]
    for future in [*requests, *background]:
        future.result(timeout=30)
    first_request = next(i for i, name in enumerate(order) if name.startswith("request"))
    # One aged unit, then the waiting requests (one group), then the backlog.
    assert order[:first_request] == ["extract"]
    assert order[first_request : first_request + 3] == [f"request-{i}" for i in range(3)]
    assert order.count("extract") == 20


def test_a_request_waits_behind_at_most_one_small_background_group(lane: WriterLane) -> None:
    order: list[str] = []
    started = threading.Event()
    queued = threading.Event()

    def extract() -> None:
        started.set()
        # The first unit holds the writer until the request is queued, so a test thread
        # descheduled on a loaded machine cannot let the backlog run ahead of it.
        assert queued.wait(timeout=30)
        deadline = time.thread_time() + 0.005  # a unit of extraction holds the writer
        while time.thread_time() < deadline:
            pass
        order.append("extract")

    with gated(lane):
        background = [lane.unit(extract, (), {}, key="a", background=True) for _ in range(20)]
    # The writer is on the backlog (nothing else was queued) when the request arrives.
    assert started.wait(timeout=30)
    request = lane.unit(recorder(order, "request"), (), {}, key="b")
    queued.set()
    request.result(timeout=30)
    for future in background:
        future.result(timeout=30)
    # The running background group, at most one aged unit more, then the request.
    assert order.index("request") <= MAX_BACKGROUND_GROUP + 1


def test_writer_stats_split_a_group_by_priority_and_workspace(lane: WriterLane) -> None:
    def busy(seconds: float) -> None:
        deadline = time.thread_time() + seconds
        while time.thread_time() < deadline:
            pass

    with gated(lane):
        heavy = lane.unit(busy, (0.05,), {}, key="hostile", cost=GROUP_COST * 2)
        light = lane.unit(busy, (0.001,), {}, key="quiet")
        extraction = lane.unit(busy, (0.002,), {}, key="quiet", background=True)
    for future in (heavy, light, extraction):
        future.result(timeout=30)
    stats = lane.stats
    # The heavy unit ran alone: the longest request group is it, in writer CPU.
    assert stats.request.longest_keys == ("hostile",)
    assert stats.request.longest_cost == GROUP_COST * 2
    assert stats.request.cpu_seconds >= 0.05
    assert stats.background.groups == 1
    assert stats.by_key["hostile"] > stats.by_key["quiet"]
