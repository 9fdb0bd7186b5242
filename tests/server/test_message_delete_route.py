"""``DELETE /v1/conversations/{id}/messages/{messageId}`` (extension, wire decision M1) over
real HTTP (uvicorn on a loopback port): deletes, is idempotent, refuses another
conversation's or another workspace's message with a 404, bounds its ids; and the hosted
client uses it against a real ``serve`` subprocess."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from backends.hosted import HostedBackend
from backends.sqlite import SQLiteBackend
from nams_local.backend import message_deleter
from nams_local.errors import InvalidInputError, NotFoundError
from nams_local.server import create_app
from nams_local.validation import MAX_ID_CHARS

from .processes import serve_process
from .support import Api, assert_error, live_server


async def _conversation(api: Api, *texts: str) -> tuple[str, list[str]]:
    conv = await api.ok("POST", "/v1/conversations", 201, json={})
    ids = []
    for text in texts:
        message = await api.ok(
            "POST",
            f"/v1/conversations/{conv['id']}/messages",
            201,
            json={"role": "user", "content": text},
        )
        ids.append(str(message["id"]))
    return str(conv["id"]), ids


async def _listed(api: Api, conversation_id: str) -> list[str]:
    body = await api.ok("GET", f"/v1/conversations/{conversation_id}/messages")
    return [m["id"] for m in body["messages"]]


async def test_delete_message_route_over_http() -> None:
    async with SQLiteBackend(":memory:", embeddings=False) as root:
        with live_server(create_app(root)) as base_url:
            async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:
                mine, theirs = Api(client, "alice-token"), Api(client, "other-token")
                conv, (keep, gone) = await _conversation(mine, "the red kite", "the blue kite")
                other_conv, (elsewhere,) = await _conversation(mine, "another chat")
                their_conv, (foreign,) = await _conversation(theirs, "not alice's")
                path = f"/v1/conversations/{conv}/messages/{gone}"

                assert_error(await client.delete(path), 401)
                assert await mine.ok("DELETE", path) == {"status": "deleted"}
                assert await _listed(mine, conv) == [keep]
                found = await mine.ok(
                    "POST", f"/v1/conversations/{conv}/search", json={"query": "kite"}
                )
                assert [m["id"] for m in found["messages"]] == [keep]
                assert (await mine.ok("GET", f"/v1/conversations/{conv}"))["messageCount"] == 1
                # Again, on the same connection: idempotent (W2), nothing else changes.
                assert await mine.ok("DELETE", path) == {"status": "deleted"}
                assert await _listed(mine, conv) == [keep]

                wrong = await mine.delete(f"/v1/conversations/{conv}/messages/{elsewhere}")
                assert "not in conversation" in assert_error(wrong, 404)
                assert await _listed(mine, other_conv) == [elsewhere]
                unknown = await mine.delete(f"/v1/conversations/no-such-conv/messages/{keep}")
                assert_error(unknown, 404)
                # Another workspace's conversation is unknown here; its message untouched.
                across = await mine.delete(f"/v1/conversations/{their_conv}/messages/{foreign}")
                assert_error(across, 404)
                # Their message id in my conversation is "not here": 200, nothing touched.
                await mine.ok("DELETE", f"/v1/conversations/{conv}/messages/{foreign}")
                assert await _listed(theirs, their_conv) == [foreign]
                assert await _listed(mine, conv) == [keep]

                long_id = "x" * (MAX_ID_CHARS + 1)
                too_long = await mine.delete(f"/v1/conversations/{conv}/messages/{long_id}")
                assert "too long" in assert_error(too_long, 400)
                too_long = await mine.delete(f"/v1/conversations/{long_id}/messages/{keep}")
                assert "too long" in assert_error(too_long, 400)
                assert await _listed(mine, conv) == [keep]

                bulk = await mine.delete(f"/v1/conversations/{conv}/messages/bulk")
                assert_error(bulk, 405)  # "bulk" is a route word, never a message id
                assert bulk.headers["allow"] == "POST"

                capabilities = await mine.ok("GET", "/v1/capabilities")
                assert capabilities["messageDelete"] is True
                document = (await client.get("/openapi.json")).json()
                operation = document["paths"]["/v1/conversations/{id}/messages/{messageId}"]
                assert operation["delete"]["x-nams-local-extension"] is True
                assert "404" in operation["delete"]["responses"]


async def test_hosted_client_deletes_a_message_through_serve(tmp_path: Path) -> None:
    with serve_process(["--port", "0", "--no-embeddings"], tmp_path) as served:
        async with HostedBackend(
            api_key="alice-token", endpoint=f"{served.base_url}/v1", max_retries=0
        ) as client:
            assert message_deleter(client) is None  # not probed yet: hosted defaults
            assert (await client.probe_capabilities()).message_delete
            assert message_deleter(client) is client
            conversation = await client.create_conversation()
            keep = await client.add_message(conversation.id, "user", "keep me")
            gone = await client.add_message(conversation.id, "user", "forget me")
            await client.delete_message(conversation.id, gone.id)
            await client.delete_message(conversation.id, gone.id)  # idempotent
            assert [m.id for m in await client.list_messages(conversation.id)] == [keep.id]
            other = await client.create_conversation()
            with pytest.raises(NotFoundError):
                await client.delete_message(other.id, keep.id)
            with pytest.raises(InvalidInputError):
                await client.delete_message(conversation.id, "x" * (MAX_ID_CHARS + 1))
            assert [m.id for m in await client.list_messages(conversation.id)] == [keep.id]
