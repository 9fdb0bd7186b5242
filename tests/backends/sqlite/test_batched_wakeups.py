"""The writer's futures reach the event loop in bursts: one loop wakeup for a whole group.

A real event loop counts its thread-safe callbacks (each one is a write to its self-pipe);
a real thread resolves the futures, and a real store commits real groups of writes.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from backends.sqlite import SQLiteBackend
from backends.sqlite.batched_wakeups import BatchedWakeups
from backends.sqlite.store import Ctx


class CountingLoop(asyncio.SelectorEventLoop):
    """An event loop that counts ``call_soon_threadsafe`` calls (its wakeups)."""

    def __init__(self) -> None:
        super().__init__()
        self.wakeups = 0

    def call_soon_threadsafe(  # type: ignore[override]
        self, callback: Callable[..., object], *args: Any, context: Any = None
    ) -> asyncio.Handle:
        self.wakeups += 1
        return super().call_soon_threadsafe(callback, *args, context=context)


def _counting() -> CountingLoop:
    loop = asyncio.get_running_loop()
    assert isinstance(loop, CountingLoop)
    return loop


def _awaited(wakeups: BatchedWakeups) -> tuple[list[Future[int]], list[asyncio.Future[int]]]:
    """Fifty writer-side futures and what the loop awaits for them."""
    sources: list[Future[int]] = [Future() for _ in range(50)]
    return sources, [wakeups.wrap(source) for source in sources]


def _run(main: Callable[[], Any]) -> Any:
    with asyncio.Runner(loop_factory=CountingLoop) as runner:
        return runner.run(main())


def test_a_burst_of_results_wakes_the_loop_once() -> None:
    async def main() -> tuple[list[int], int]:
        loop = _counting()
        wakeups = BatchedWakeups()
        sources, waiting = _awaited(wakeups)
        resolved = threading.Event()

        def resolve_all() -> None:
            for i, source in enumerate(sources):
                source.set_result(i)
            resolved.set()

        before = loop.wakeups
        thread = threading.Thread(target=resolve_all)
        thread.start()
        # The loop thread blocks (it runs nothing) until every result is delivered.
        assert resolved.wait(timeout=30)
        thread.join(timeout=30)
        results = list(await asyncio.gather(*waiting))
        return results, loop.wakeups - before

    results, wakeups = _run(main)
    assert results == list(range(50))
    assert wakeups == 1


def test_results_of_a_burst_wake_an_idle_loop_once() -> None:
    """Inside ``burst`` (the writer publishing a group), nothing wakes the loop until the
    burst ends, even with the loop idle and free to run at every result."""

    async def main() -> tuple[list[int], int]:
        loop = _counting()
        wakeups = BatchedWakeups()
        sources, waiting = _awaited(wakeups)

        def resolve_all() -> None:
            with wakeups.burst():
                for i, source in enumerate(sources):
                    source.set_result(i)

        before = loop.wakeups
        thread = threading.Thread(target=resolve_all)
        thread.start()
        results = list(await asyncio.wait_for(asyncio.gather(*waiting), timeout=30))
        thread.join(timeout=30)
        return results, loop.wakeups - before

    results, wakeups = _run(main)
    assert results == list(range(50))
    assert wakeups == 1


def test_errors_and_cancellation_pass_through() -> None:
    async def main() -> None:
        wakeups = BatchedWakeups()
        failing: Future[int] = Future()
        waiting = wakeups.wrap(failing)
        threading.Thread(target=failing.set_exception, args=(KeyError("boom"),)).start()
        with pytest.raises(KeyError, match="boom"):
            await asyncio.wait_for(waiting, timeout=30)

        # Cancelling the awaiting side cancels a source nobody started yet (a queued
        # unit of work is then skipped by the writer).
        queued: Future[int] = Future()
        abandoned = wakeups.wrap(queued)
        abandoned.cancel()
        await asyncio.sleep(0)
        assert queued.cancelled()

        # A source cancelled on its side cancels the awaiting future.
        dropped: Future[int] = Future()
        awaiting = wakeups.wrap(dropped)
        threading.Thread(target=dropped.cancel).start()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(awaiting, timeout=30)

    _run(main)


def test_a_result_after_its_loop_closed_is_dropped_quietly() -> None:
    source: Future[int] = Future()
    wakeups = BatchedWakeups()

    async def main() -> None:
        wakeups.wrap(source)

    _run(main)  # the loop is closed when this returns
    errors: list[BaseException] = []
    thread = threading.Thread(target=lambda: _resolve(source, errors))
    thread.start()
    thread.join(timeout=30)
    assert errors == []


def _resolve(source: Future[int], errors: list[BaseException]) -> None:
    try:
        source.set_result(1)
    except BaseException as error:  # pragma: no cover - what the test rules out
        errors.append(error)


def test_a_group_of_writes_is_acknowledged_with_few_wakeups(tmp_path: Path) -> None:
    """32 adds committed as one group: their 32 acks reach the loop in a burst, not as 32
    separate wakeups (``wrap_future`` made one each)."""
    writes = 32

    async def main() -> tuple[int, int]:
        loop = _counting()
        backend = SQLiteBackend(tmp_path / "w.sqlite3", embeddings=False, extraction="off")
        try:
            conv = await backend.create_conversation(user_id="u")
            store = backend.store
            gate, entered = threading.Event(), threading.Event()

            def hold(ctx: Ctx) -> None:
                entered.set()
                assert gate.wait(timeout=30), "the test never opened the gate"

            holder = asyncio.ensure_future(store.run(hold, Ctx(store, backend.workspace)))
            assert await asyncio.to_thread(entered.wait, 30)
            adds = [
                asyncio.ensure_future(backend.add_message(conv.id, "user", f"message {i}"))
                for i in range(writes)
            ]
            deadline = loop.time() + 30
            while store.writer.queued < writes:
                assert loop.time() < deadline, "the writes never queued"
                await asyncio.sleep(0.005)
            before = loop.wakeups
            gate.set()
            await holder
            stored = await asyncio.gather(*adds)
            assert len({m.id for m in stored}) == writes
            return loop.wakeups - before, store.writer.largest_group
        finally:
            await backend.aclose()

    wakeups, largest = _run(main)
    assert largest >= writes
    # The holder's ack and the group's one burst (``wrap_future`` made one per write).
    assert wakeups <= 3
