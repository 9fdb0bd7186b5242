"""When the hosted client tries a request again, and how long it waits first.

The rule that matters: a retry must never write twice. GET, PUT and DELETE are idempotent,
so they are retried after any network failure and after the statuses that mean "try later"
(429, 502, 503, 504). A POST creates something, so it is retried only when the request
provably never reached the server (the connection was never made); a POST that timed out
while waiting for the answer may have been applied, and is reported, not repeated.

Waits grow exponentially with jitter: retry ``n`` waits between three quarters and all of
``backoff_base * 2**(n-1)`` (capped at ``backoff_max``), so clients that failed together
spread out, yet (below the cap) each wait is clearly longer than the one before. A
``Retry-After`` header (429/503) is honoured instead. Everything is bounded by ``budget``
seconds from the first attempt: no retry starts, and no wait is begun, that would end later.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx

__all__ = [
    "IDEMPOTENT_METHODS",
    "JITTER",
    "RETRY_STATUSES",
    "RetryPolicy",
    "never_sent",
    "parse_retry_after",
]

IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
#: The share of a wait that jitter may take off.
JITTER = 0.25
#: Statuses that mean "not now": rate limited, or a gateway/server briefly unavailable.
RETRY_STATUSES = frozenset({429, 502, 503, 504})
#: Failures that cannot be cured by waiting (a wrong URL, a request httpx refuses to send).
_PERMANENT = (httpx.UnsupportedProtocol, httpx.LocalProtocolError, httpx.ProxyError)


def never_sent(exc: httpx.TransportError) -> bool:
    """True when the request provably did not reach the server: no connection was made."""
    return isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout)


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """``Retry-After`` as seconds to wait: delta-seconds or an HTTP date; None if unusable."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    if seconds != seconds:  # NaN
        return None
    return max(0.0, seconds)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How many times, after which failures, and how long to wait between attempts."""

    #: Retries after the first attempt (so at most ``max_retries + 1`` attempts).
    max_retries: int = 3
    #: Seconds from the first attempt after which no retry starts (and a retry's own
    #: timeout is cut so that it ends by then).
    budget: float = 60.0
    backoff_base: float = 0.5
    backoff_max: float = 8.0

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        if self.budget < 0 or self.backoff_base < 0 or self.backoff_max < 0:
            raise ValueError("budget and backoff times must be >= 0")

    def retry_on_error(self, method: str, exc: httpx.TransportError) -> bool:
        if isinstance(exc, _PERMANENT):
            return False
        return never_sent(exc) or method.upper() in IDEMPOTENT_METHODS

    def retry_on_status(self, method: str, status: int) -> bool:
        return status in RETRY_STATUSES and method.upper() in IDEMPOTENT_METHODS

    def backoff(self, retry: int, rng: random.Random) -> float:
        """The wait before retry number ``retry`` (1-based): the ceiling less up to 25 %."""
        ceiling = min(self.backoff_max, self.backoff_base * 2 ** (retry - 1))
        return float(ceiling * (1.0 - JITTER * rng.random()))
