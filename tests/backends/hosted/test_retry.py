"""Retry policy of the hosted client, against a real HTTP server on a loopback port.

Idempotent requests (GET/PUT/DELETE) are retried after 429/502/503/504 and network
failures, with growing waits; a POST only when it provably never reached the server.
"""

from __future__ import annotations

import itertools
import threading
import time

import httpx
import pytest

from backends.hosted import HostedBackend
from backends.hosted.retry import JITTER, RetryPolicy, parse_retry_after
from nams_local.errors import BackendUnavailableError, NotFoundError

from .scripted_server import Reply, ScriptedServer

CONVERSATION = {"id": "c1", "userId": "u", "metadata": {}, "workspaceId": "w"}
BASE = 0.3  # backoff_base of the timing test (seconds)


def client(url: str, **options: object) -> HostedBackend:
    settings: dict[str, object] = {"max_retries": 3, "backoff_base": BASE, "timeout": 5.0}
    settings.update(options)
    return HostedBackend("test-key", endpoint=f"{url}/v1", **settings)  # type: ignore[arg-type]


def gaps(times: list[float]) -> list[float]:
    return [later - earlier for earlier, later in itertools.pairwise(times)]


async def test_503_twice_then_200_succeeds_on_the_third_attempt(server: ScriptedServer) -> None:
    unavailable = Reply(503, {"error": "busy"})
    server.script("GET", "/v1/conversations/c1", unavailable, unavailable, Reply(200, CONVERSATION))

    async with client(server.url) as backend:
        conversation = await backend.get_conversation("c1")

    assert conversation.id == "c1"
    arrivals = [r.at for r in server.requests_to("GET", "/v1/conversations/c1")]
    assert len(arrivals) == 3
    first, second = gaps(arrivals)
    # retry n waits within [(1 - JITTER), 1] x BASE x 2**(n-1): the second wait is longer.
    assert first >= (1 - JITTER) * BASE
    # The second wait is at least (1 - JITTER) x 2 x BASE, more than the longest first wait
    # the policy can draw (BASE): that is the doubling. (Comparing the two measured gaps
    # directly is flaky: each also holds the request's own time, which a loaded machine
    # stretches.)
    assert second >= (1 - JITTER) * 2 * BASE > BASE
    assert first < BASE + 1.0  # generous: at most BASE plus scheduling noise


async def test_429_honours_retry_after(server: ScriptedServer) -> None:
    server.script(
        "GET",
        "/v1/entities",
        Reply(429, {"error": "slow down"}, {"Retry-After": "1"}),
        Reply(200, {"entities": []}),
    )

    async with client(server.url, backoff_base=0.01) as backend:
        started = time.monotonic()
        assert await backend.list_entities() == []
        elapsed = time.monotonic() - started

    (gap,) = gaps([r.at for r in server.requests_to("GET", "/v1/entities")])
    assert gap >= 1.0
    assert elapsed >= 1.0


@pytest.mark.parametrize("status", [429, 502, 503, 504])
async def test_every_retry_status_is_retried_for_get(server: ScriptedServer, status: int) -> None:
    server.script("GET", "/v1/entities", Reply(status, {"error": "later"}), Reply(200, {}))

    async with client(server.url, backoff_base=0.01) as backend:
        assert await backend.list_entities() == []

    assert len(server.requests_to("GET", "/v1/entities")) == 2


@pytest.mark.parametrize("status", [400, 404, 500, 501])
async def test_other_statuses_are_not_retried(server: ScriptedServer, status: int) -> None:
    server.script("GET", "/v1/entities", Reply(status, {"error": "no"}))

    async with client(server.url, backoff_base=0.01) as backend:
        with pytest.raises(Exception, match="no"):
            await backend.list_entities()

    assert len(server.requests_to("GET", "/v1/entities")) == 1


async def test_put_and_delete_are_retried(server: ScriptedServer) -> None:
    server.script("PUT", "/v1/entities/e1", Reply(503, {}), Reply(200, {"status": "updated"}))
    server.script("DELETE", "/v1/entities/e1", Reply(502, {}), Reply(200, {"status": "deleted"}))

    async with client(server.url, backoff_base=0.01) as backend:
        await backend.update_entity("e1", name="New")
        await backend.delete_entity("e1")

    assert len(server.requests_to("PUT", "/v1/entities/e1")) == 2
    assert len(server.requests_to("DELETE", "/v1/entities/e1")) == 2


async def test_post_503_is_not_retried(server: ScriptedServer) -> None:
    server.script("POST", "/v1/conversations", Reply(503, {"error": "overloaded"}))

    async with client(server.url, backoff_base=0.01) as backend:
        with pytest.raises(BackendUnavailableError, match="overloaded"):
            await backend.create_conversation(user_id="u")

    assert len(server.requests_to("POST", "/v1/conversations")) == 1


async def test_post_read_timeout_is_not_retried(server: ScriptedServer) -> None:
    release = threading.Event()
    server.script("POST", "/v1/conversations/c1/messages", Reply(201, {"id": "m"}, hold=release))

    async with client(server.url, timeout=0.3, backoff_base=0.01) as backend:
        try:
            with pytest.raises(BackendUnavailableError, match="ReadTimeout"):
                await backend.add_message("c1", "user", "hello")
        finally:
            release.set()

    assert len(server.requests_to("POST", "/v1/conversations/c1/messages")) == 1


async def test_get_read_timeout_is_retried(server: ScriptedServer) -> None:
    release = threading.Event()
    server.script(
        "GET",
        "/v1/conversations/c1",
        Reply(200, CONVERSATION, hold=release),
        Reply(200, CONVERSATION),
    )

    async with client(server.url, timeout=0.3, backoff_base=0.01) as backend:
        try:
            assert (await backend.get_conversation("c1")).id == "c1"
        finally:
            release.set()

    assert len(server.requests_to("GET", "/v1/conversations/c1")) == 2


async def test_delete_that_may_have_been_applied_then_404_counts_as_done(
    server: ScriptedServer,
) -> None:
    """The first DELETE timed out after it was sent; its retry finds nothing: done."""
    release = threading.Event()
    server.script(
        "DELETE",
        "/v1/conversations/c1",
        Reply(200, {"status": "deleted"}, hold=release),
        Reply(404, {"error": "Not found"}),
    )

    async with client(server.url, timeout=0.3, backoff_base=0.01) as backend:
        try:
            await backend.delete_conversation("c1")
        finally:
            release.set()

    assert len(server.requests_to("DELETE", "/v1/conversations/c1")) == 2


async def test_plain_delete_404_is_done(server: ScriptedServer) -> None:
    """Deletes are idempotent (W2): a server that answers 404 for an absent id (an older
    nams-local) means "already gone", once, with no retry; other routes' 404s still raise."""
    server.script("DELETE", "/v1/conversations/c1", Reply(404, {"error": "Not found"}))
    server.script("GET", "/v1/conversations/c1", Reply(404, {"error": "Not found"}))

    async with client(server.url) as backend:
        await backend.delete_conversation("c1")
        with pytest.raises(NotFoundError):
            await backend.get_conversation("c1")

    assert len(server.requests_to("DELETE", "/v1/conversations/c1")) == 1


class CountingTransport(httpx.AsyncBaseTransport):
    """A real network transport that counts the attempts made through it."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.attempts = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.attempts += 1
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_post_connect_error_is_retried_then_unavailable(closed_port: int) -> None:
    transport = CountingTransport()
    backend = client(
        f"http://127.0.0.1:{closed_port}", max_retries=2, backoff_base=0.1, transport=transport
    )

    started = time.monotonic()
    async with backend:
        with pytest.raises(BackendUnavailableError, match="ConnectError"):
            await backend.create_conversation(user_id="u")
    elapsed = time.monotonic() - started

    assert transport.attempts == 3
    assert elapsed >= (1 - JITTER) * (0.1 + 0.2)


async def test_total_time_stays_within_the_budget(server: ScriptedServer) -> None:
    server.script("GET", "/v1/entities", Reply(503, {"error": "still down"}))

    async with client(server.url, max_retries=50, backoff_base=0.1, retry_budget=1.0) as backend:
        started = time.monotonic()
        with pytest.raises(BackendUnavailableError, match="still down"):
            await backend.list_entities()
        elapsed = time.monotonic() - started

    arrivals = [r.at for r in server.requests_to("GET", "/v1/entities")]
    assert elapsed <= 1.0 + 1.0  # the budget plus generous slack (unbounded would be minutes)
    # It retried, and stopped long before max_retries: every attempt began within the
    # budget. (How many fit depends on how long each request takes on a loaded machine:
    # four here when idle, fewer when each takes a few hundred ms, so only ">= 2" holds.)
    assert 2 <= len(arrivals) < 51
    assert all(started <= at < started + 1.0 for at in arrivals)


async def test_retry_after_beyond_the_budget_gives_up_at_once(server: ScriptedServer) -> None:
    server.script(
        "GET", "/v1/entities", Reply(429, {"error": "quota exhausted"}, {"Retry-After": "30"})
    )

    async with client(server.url, retry_budget=2.0) as backend:
        started = time.monotonic()
        with pytest.raises(BackendUnavailableError, match="quota exhausted"):
            await backend.list_entities()
        elapsed = time.monotonic() - started

    # Far below the 30 s it was told to wait (one request's time on a loaded machine can
    # pass a second, so the bound is not that tight); the single attempt is the proof.
    assert elapsed < 10.0
    assert len(server.requests_to("GET", "/v1/entities")) == 1


async def test_max_retries_zero_makes_one_attempt(server: ScriptedServer) -> None:
    server.script("GET", "/v1/entities", Reply(503, {"error": "down"}))

    async with client(server.url, max_retries=0) as backend:
        with pytest.raises(BackendUnavailableError):
            await backend.list_entities()

    assert len(server.requests_to("GET", "/v1/entities")) == 1


# -- the policy itself --------------------------------------------------------------------


def test_retry_after_forms() -> None:
    from datetime import UTC, datetime

    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after("1") == 1.0
    assert parse_retry_after(" 2.5 ") == 2.5
    assert parse_retry_after("-3") == 0.0
    assert parse_retry_after("Thu, 01 Jan 2026 12:00:07 GMT", now=now) == 7.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after("") is None
    assert parse_retry_after(None) is None


def test_which_failures_are_retried() -> None:
    policy = RetryPolicy()
    request = httpx.Request("POST", "http://x")
    connect = httpx.ConnectError("refused", request=request)
    connect_timeout = httpx.ConnectTimeout("slow", request=request)
    read_timeout = httpx.ReadTimeout("slow", request=request)
    reset = httpx.RemoteProtocolError("reset", request=request)
    bad_url = httpx.UnsupportedProtocol("ftp", request=request)

    for method in ("GET", "PUT", "DELETE", "POST"):
        assert policy.retry_on_error(method, connect)
        assert policy.retry_on_error(method, connect_timeout)
        assert not policy.retry_on_error(method, bad_url)
    for method in ("GET", "PUT", "DELETE"):
        assert policy.retry_on_error(method, read_timeout)
        assert policy.retry_on_error(method, reset)
        assert all(policy.retry_on_status(method, s) for s in (429, 502, 503, 504))
        assert not any(policy.retry_on_status(method, s) for s in (400, 404, 500, 501))
    assert not policy.retry_on_error("POST", read_timeout)
    assert not policy.retry_on_error("POST", reset)
    assert not any(policy.retry_on_status("POST", s) for s in (429, 502, 503, 504))


def test_backoff_grows_and_is_capped() -> None:
    import random

    policy = RetryPolicy(backoff_base=1.0, backoff_max=5.0)
    rng = random.Random(7)
    for _ in range(200):
        waits = [policy.backoff(n, rng) for n in (1, 2, 3, 4, 5)]
        assert 0.75 <= waits[0] <= 1.0
        assert waits[0] < waits[1] < waits[2]
        assert all(w <= 5.0 for w in waits)
