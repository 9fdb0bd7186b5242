"""Every HTTP failure becomes a typed error with the server's text and request id."""

from __future__ import annotations

import pytest

from backends.hosted import HostedBackend
from backends.hosted.errors import error_class
from nams_local.errors import (
    AuthenticationError,
    BackendUnavailableError,
    InvalidInputError,
    NamsError,
    NotFoundError,
    NotSupportedError,
)

from .scripted_server import Reply, ScriptedServer


def client(server: ScriptedServer) -> HostedBackend:
    return HostedBackend("test-key", endpoint=f"{server.url}/v1", max_retries=0)


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (400, InvalidInputError),
        (401, AuthenticationError),
        (403, AuthenticationError),
        (404, NotFoundError),
        (422, InvalidInputError),
        (429, BackendUnavailableError),
        (500, BackendUnavailableError),
        (501, NotSupportedError),
        (502, BackendUnavailableError),
        (503, BackendUnavailableError),
        (504, BackendUnavailableError),
    ],
)
async def test_status_maps_to_typed_error(
    server: ScriptedServer, status: int, expected: type[NamsError]
) -> None:
    text = f"server says {status}"
    server.script(
        "GET", "/v1/entities/e1", Reply(status, {"error": text}, {"X-Request-Id": f"req-{status}"})
    )

    async with client(server) as backend:
        with pytest.raises(expected) as caught:
            await backend.get_entity("e1")

    assert type(caught.value) is expected
    assert caught.value.message == text
    assert str(caught.value) == text
    assert caught.value.request_id == f"req-{status}"


@pytest.mark.parametrize(
    "header", ["X-Request-Id", "x-request-id", "Request-Id", "X-Correlation-Id"]
)
async def test_request_id_header_variants(server: ScriptedServer, header: str) -> None:
    server.script("GET", "/v1/entities/e1", Reply(404, {"error": "Not found"}, {header: "abc-123"}))

    async with client(server) as backend:
        with pytest.raises(NotFoundError) as caught:
            await backend.get_entity("e1")

    assert caught.value.request_id == "abc-123"


async def test_error_without_request_id(server: ScriptedServer) -> None:
    server.script("GET", "/v1/entities/e1", Reply(404, {"error": "Not found"}))

    async with client(server) as backend:
        with pytest.raises(NotFoundError) as caught:
            await backend.get_entity("e1")

    assert caught.value.request_id is None


@pytest.mark.parametrize(
    ("body", "text"),
    [
        (b"upstream exploded", "upstream exploded"),
        ({"detail": "FastAPI style"}, "FastAPI style"),
        ({"message": "other style"}, "other style"),
        (b"", "Internal Server Error"),
    ],
    ids=["plain-text", "detail", "message", "empty"],
)
async def test_error_text_without_the_hosted_shape(
    server: ScriptedServer, body: object, text: str
) -> None:
    server.script("GET", "/v1/entities/e1", Reply(500, body, {"Content-Type": "text/plain"}))

    async with client(server) as backend:
        with pytest.raises(BackendUnavailableError) as caught:
            await backend.get_entity("e1")

    assert caught.value.message == text


async def test_non_json_success_is_unavailable(server: ScriptedServer) -> None:
    server.script("GET", "/v1/entities/e1", Reply(200, b"<html>captive portal</html>"))

    async with client(server) as backend:
        with pytest.raises(BackendUnavailableError, match="not JSON"):
            await backend.get_entity("e1")


async def test_unreachable_server_is_unavailable(closed_port: int) -> None:
    backend = HostedBackend("k", endpoint=f"http://127.0.0.1:{closed_port}/v1", max_retries=0)
    async with backend:
        with pytest.raises(BackendUnavailableError, match="ConnectError"):
            await backend.list_entities()


def test_unlisted_statuses() -> None:
    assert error_class(405) is NotSupportedError
    assert error_class(409) is InvalidInputError
    assert error_class(418) is InvalidInputError
    assert error_class(599) is BackendUnavailableError
    assert error_class(302) is NamsError


async def test_invalid_input_makes_no_request(server: ScriptedServer) -> None:
    """Refused client-side exactly like the local engine refuses it: nothing is sent."""
    from nams_local.models import NewMessage

    async with client(server) as backend:
        with pytest.raises(InvalidInputError):
            await backend.add_messages("c1", [NewMessage(role="user", content="x")] * 101)
        with pytest.raises(InvalidInputError):
            await backend.add_message("c1", "bot", "hello")
        with pytest.raises(InvalidInputError):
            await backend.list_messages("c1", limit=201)
        with pytest.raises(InvalidInputError):
            await backend.search_entities("  ")
        with pytest.raises(InvalidInputError):
            await backend.search_messages("c1", "q", mode="fuzzy")  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError):
            await backend.entity_feedback("e1", user_score=1.5)
        with pytest.raises(InvalidInputError):
            await backend.record_tool_call("tool", "{}", status="exploded")
        with pytest.raises(InvalidInputError):
            await backend.update_entity("e1")
        with pytest.raises(NotFoundError):
            await backend.get_conversation("  ")
        with pytest.raises(InvalidInputError):
            await backend.query("RETURN $x", {"x": float("nan")})

    assert server.received == []


def test_blank_api_key_is_refused() -> None:
    with pytest.raises(AuthenticationError):
        HostedBackend("  ")


async def test_a_post_answered_429_is_not_repeated_but_says_how_long_to_wait(
    server: ScriptedServer,
) -> None:
    """``nams-local sync`` needs the wait of a POST the client may not repeat itself."""
    server.script(
        "POST",
        "/v1/entities",
        Reply(429, {"error": "rate limited"}, {"Retry-After": "7"}),
        Reply(201, {"id": "e1", "name": "Acme", "type": "organization"}),
    )

    async with HostedBackend("test-key", endpoint=f"{server.url}/v1") as backend:
        with pytest.raises(BackendUnavailableError) as caught:
            await backend.add_entity("Acme", "organization")

    assert caught.value.retry_after == 7.0
    assert len(server.requests_to("POST", "/v1/entities")) == 1
