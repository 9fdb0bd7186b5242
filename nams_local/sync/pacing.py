"""Sending one write to a target that may say "not now" (429 / 503 with ``Retry-After``).

The hosted client retries idempotent requests itself, but never a POST after it was
answered (``backends/hosted/retry.py``: a POST is repeated only when it provably never
reached the server). A sync must get every write through, so it waits here: as long as the
target's ``Retry-After`` says (else a doubling backoff), bounded in waits and in total
time. Before sending again it asks the target (``lookup``) whether the first attempt was
applied after all, so a write that landed behind a failed answer is never made twice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from ..errors import BackendUnavailableError

__all__ = ["Pacing", "send_paced"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Pacing:
    """How long one write may wait for the target before the sync gives up (resumable)."""

    #: Waits for one write at most.
    max_waits: int = 30
    #: Seconds one write may spend waiting in total.
    budget: float = 600.0
    #: The first backoff when the target gives no ``Retry-After``, doubling up to ``cap``.
    base: float = 0.5
    cap: float = 30.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return retry_after
        return float(min(self.cap, self.base * 2 ** (attempt - 1)))


async def send_paced(
    send: Callable[[], Awaitable[T]],
    lookup: Callable[[], Awaitable[T | None]],
    pacing: Pacing,
    on_wait: Callable[[float], None],
) -> tuple[T, bool]:
    """``send()``'s result, or ``lookup()``'s when an earlier attempt turns out to have
    landed; the flag says which (True: found on the target, not sent again)."""
    waited = 0.0
    attempt = 0
    while True:
        try:
            return await send(), False
        except BackendUnavailableError as exc:
            attempt += 1
            delay = pacing.delay(attempt, exc.retry_after)
            if attempt > pacing.max_waits or waited + delay > pacing.budget:
                raise
            on_wait(delay)
            await asyncio.sleep(delay)
            waited += delay
            found = await lookup()
            if found is not None:
                return found, True
