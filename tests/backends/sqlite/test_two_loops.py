"""One backend, two event loops in two threads: every call finishes, no place is lost.

The reader and Cypher lanes admit work through ``lanes.FairGate``. A backend object shared
by loops in two threads (the ``turn`` benchmark once served its in-process backend from
uvicorn's loop in a second thread) releases places on one thread that waiters of the other
loop hold: the gate must wake them through their own loop and keep its counts under a
lock. Before that fix these tests hung (``LoopsTimedOut``) or ended with places leaked.
"""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from backends.sqlite import SQLiteBackend
from backends.sqlite.lanes import FairGate
from nams_local import NewMessage
from nams_local.embeddings import HashingEmbedder

from .loops import run_on_loops
from .turn_requests import USER, full_request

#: Generous for a loaded 2-core machine: the work below takes a few seconds there; a lost
#: wake-up never finishes at all.
DEADLINE = 60.0


async def _seed(backend: SQLiteBackend) -> str:
    conversation = await backend.create_conversation(USER)
    await backend.add_messages(
        conversation.id,
        [NewMessage(role="user", content=f"note {i}: Alex moved to Lima") for i in range(20)],
    )
    await backend.add_entity("Lima", "place", "a city in Peru")
    return conversation.id


@pytest.mark.parametrize("extraction", ["off", "sync", "background"])
def test_one_backend_serves_two_loops_at_once(tmp_path: Path, extraction: str) -> None:
    """Writes, searches, turns and lists from both loops at once, with each extraction mode
    (its drains run on the loop of the write that queued them; the other loop waits for
    them through a thread-safe future)."""
    backend = SQLiteBackend(
        tmp_path / "loops.db",
        embedder=HashingEmbedder(),
        extraction=extraction,  # type: ignore[arg-type]
    )
    try:
        conversation_id = asyncio.run(_seed(backend))

        def work(loop_no: int) -> Callable[[], Coroutine[Any, Any, int]]:
            async def calls(i: int) -> None:
                match i % 5:
                    case 0:
                        content = f"loop {loop_no} call {i}: Alex likes ceviche"
                        await backend.add_messages(
                            conversation_id, [NewMessage(role="user", content=content)]
                        )
                    case 1:
                        await backend.search_messages(conversation_id, f"Lima note {i}")
                    case 2:
                        turn = full_request(conversation_id, "where does Alex live")
                        await backend.recall_turn(turn)
                    case 3:
                        await backend.search_entities("Lima")
                    case _:
                        await backend.list_messages(conversation_id)

            async def main() -> int:
                await asyncio.gather(*(calls(i) for i in range(60)))
                return 60

            return main

        assert run_on_loops([work(0), work(1)], DEADLINE) == [60, 60]
        asyncio.run(backend.wait_for_extraction(conversation_id))
        status = asyncio.run(backend.get_extraction_status(conversation_id))
        assert extraction == "off" or {u.status for u in status.units} == {"done"}
        reads = backend.store.lanes.reads
        assert (reads.running, reads.waiting) == (0, 0)
        messages = asyncio.run(backend.list_messages(conversation_id, limit=100))
        assert len(messages) == 20 + 2 * 12
    finally:
        asyncio.run(backend.aclose())


def test_a_gate_shared_by_two_loops_never_admits_too_many_and_ends_empty() -> None:
    gate = FairGate(capacity=3, per_key=2, queue=1000)
    lock = threading.Lock()
    holding: dict[str, int] = {}
    most = {"all": 0, "a": 0, "b": 0}

    def hold(key: str, step: int) -> None:
        with lock:
            holding[key] = holding.get(key, 0) + step
            total = sum(holding.values())
            most["all"] = max(most["all"], total)
            most[key] = max(most[key], holding[key])

    def work(seed: int) -> Callable[[], Coroutine[Any, Any, int]]:
        async def one(rng: random.Random) -> None:
            key = rng.choice("ab")
            await gate.acquire(key)
            hold(key, 1)
            try:
                await asyncio.sleep(rng.random() / 1000)
            finally:
                hold(key, -1)
                gate.release(key)

        async def main() -> int:
            rng = random.Random(seed)
            for _ in range(5):
                await asyncio.gather(*(one(rng) for _ in range(100)))
            return 500

        return main

    assert run_on_loops([work(1), work(2)], DEADLINE) == [500, 500]
    assert most["all"] == 3  # the gate was full, never over
    assert max(most["a"], most["b"]) == 2
    assert (gate.running, gate.waiting()) == (0, 0)


def test_a_waiter_of_another_loop_is_woken_by_a_release() -> None:
    gate = FairGate(capacity=1, per_key=1, queue=8)
    held = threading.Event()
    waiting = threading.Event()

    async def holder() -> str:
        await gate.acquire("k")
        held.set()
        await asyncio.to_thread(waiting.wait, DEADLINE)
        while gate.waiting() == 0:  # the other loop's waiter is queued now
            await asyncio.sleep(0.001)
        gate.release("k")
        return "released"

    async def waiter() -> str:
        await asyncio.to_thread(held.wait, DEADLINE)
        waiting.set()
        await gate.acquire("k")  # the other loop's thread releases: only a wake-up through
        gate.release("k")  # this loop's self-pipe reaches this idle loop
        return "admitted"

    assert run_on_loops([holder, waiter], DEADLINE) == ["released", "admitted"]
    assert (gate.running, gate.waiting()) == (0, 0)


@pytest.mark.parametrize("give_up", ["cancel", "timeout"])
def test_a_place_granted_to_a_waiter_that_gave_up_meanwhile_is_passed_on(give_up: str) -> None:
    """The release on loop A grants the place to loop B's first waiter while loop B is
    busy; before that grant's wake-up runs on loop B, the waiter gives up (cancelled, or
    its wait ran out meanwhile: its timeout is due in the same loop iteration). The place
    must go to the next waiter, not vanish with the one that left."""
    gate = FairGate(capacity=1, per_key=1, queue=8)
    wait = 0.05 if give_up == "timeout" else None
    held, queued, released = threading.Event(), threading.Event(), threading.Event()

    async def holder() -> str:
        await gate.acquire("k")
        held.set()
        await asyncio.to_thread(queued.wait, DEADLINE)
        if wait is not None:
            await asyncio.sleep(2 * wait)  # the first waiter's wait is over by now
        gate.release("k")  # grants it to the first waiter, on the other loop
        released.set()
        return "released"

    async def waiters() -> tuple[bool, bool]:
        await asyncio.to_thread(held.wait, DEADLINE)
        first = asyncio.create_task(gate.acquire("k", wait))
        second = asyncio.create_task(gate.acquire("k"))
        while gate.waiting() < 2:
            await asyncio.sleep(0)
        queued.set()
        # Block this loop (no await) until the release on the other thread is done, so
        # the grant's wake-up is still queued when the first waiter gives up.
        assert released.wait(DEADLINE)
        if wait is None:
            first.cancel()
        with pytest.raises((asyncio.CancelledError, TimeoutError)):
            await first
        async with asyncio.timeout(DEADLINE):
            await second
        granted = gate.running == 1
        gate.release("k")
        return first.done(), granted

    assert run_on_loops([holder, waiters], DEADLINE) == ["released", (True, True)]
    assert (gate.running, gate.waiting()) == (0, 0)


def test_a_waiter_cancelled_right_after_its_grant_passes_the_place_on() -> None:
    """On one loop: the release grants the place and, before the waiter runs again, it is
    cancelled."""

    async def main() -> tuple[int, int]:
        gate = FairGate(capacity=1, per_key=1, queue=8)
        await gate.acquire("k")
        first = asyncio.create_task(gate.acquire("k"))
        second = asyncio.create_task(gate.acquire("k"))
        while gate.waiting() < 2:
            await asyncio.sleep(0)
        gate.release("k")
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        async with asyncio.timeout(DEADLINE):
            await second
        running = gate.running
        gate.release("k")
        return running, gate.running + gate.waiting()

    assert asyncio.run(main()) == (1, 0)
