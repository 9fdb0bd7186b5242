"""What clients written against the live service send (issue 16), over raw HTTP.

Conversation metadata with JSON scalars (W1), idempotent deletes (W2) and tool calls with
or without a step (W3). The same rules through ``HostedBackend`` are in ``tests/contract``.
"""

from __future__ import annotations

from typing import Any

import pytest

from backends.sqlite import SQLiteBackend

from .support import UNKNOWN_ID, Api, assert_error


@pytest.mark.parametrize(
    "metadata",
    [
        {"source": "e2e", "seq": 1},
        {"ratio": 0.5, "ok": True, "off": False, "gone": None, "name": "x"},
        {"big": 9007199254740993, "negative": -3, "zero": 0.0},
    ],
)
async def test_conversation_metadata_scalars_are_returned_as_given(
    alice: Api, metadata: dict[str, Any]
) -> None:
    created = await alice.ok("POST", "/v1/conversations", 201, json={"metadata": metadata})
    got = await alice.ok("GET", f"/v1/conversations/{created['id']}")
    [listed] = (await alice.ok("GET", "/v1/conversations"))["conversations"]

    for body in (created, got, listed):
        assert body["metadata"] == metadata
        # ``1`` stays an integer, ``True`` a boolean, ``0.0`` a float: as given.
        assert [type(v) for v in body["metadata"].values()] == [type(v) for v in metadata.values()]


@pytest.mark.parametrize(
    "metadata",
    [{"nested": {"a": "b"}}, {"list": ["a"]}, {"deep": {"a": {"b": 1}}}, ["not", "a", "map"], "x"],
)
async def test_conversation_metadata_objects_and_arrays_are_400(
    root: SQLiteBackend, alice: Api, metadata: Any
) -> None:
    assert_error(await alice.post("/v1/conversations", json={"metadata": metadata}), 400)

    assert set(root.store.run_sync(root.store.counts).values()) == {0}


async def test_message_metadata_keeps_scalars_and_nesting(alice: Api) -> None:
    conversation = (await alice.ok("POST", "/v1/conversations", 201))["id"]
    metadata = {"seq": 2, "ok": False, "none": None, "tags": ["a", 1], "at": {"x": 1.5}}

    sent = await alice.ok(
        "POST",
        f"/v1/conversations/{conversation}/messages",
        201,
        json={"role": "user", "content": "hi", "metadata": metadata},
    )
    [read] = (await alice.ok("GET", f"/v1/conversations/{conversation}/messages"))["messages"]

    assert sent["metadata"] == metadata and read["metadata"] == metadata


async def test_second_delete_of_a_conversation_is_200_deleted(alice: Api) -> None:
    doomed = (await alice.ok("POST", "/v1/conversations", 201))["id"]
    kept = (await alice.ok("POST", "/v1/conversations", 201))["id"]

    for _ in range(2):
        assert await alice.ok("DELETE", f"/v1/conversations/{doomed}") == {"status": "deleted"}

    assert_error(await alice.get(f"/v1/conversations/{doomed}"), 404)
    listed = (await alice.ok("GET", "/v1/conversations"))["conversations"]
    assert [c["id"] for c in listed] == [kept]


@pytest.mark.parametrize(
    "path",
    [
        f"/v1/conversations/{UNKNOWN_ID}",
        f"/v1/entities/{UNKNOWN_ID}",
        f"/v1/relationships/{UNKNOWN_ID}",
    ],
)
async def test_deleting_an_unknown_id_is_200_and_writes_nothing(
    root: SQLiteBackend, alice: Api, path: str
) -> None:
    assert await alice.ok("DELETE", path) == {"status": "deleted"}

    assert set(root.store.run_sync(root.store.counts).values()) == {0}


async def test_deleting_another_workspaces_data_changes_nothing(alice: Api, bob: Api) -> None:
    conversation = (await alice.ok("POST", "/v1/conversations", 201))["id"]
    entity = (await alice.ok("POST", "/v1/entities", 201, json={"name": "A", "type": "t"}))["id"]

    assert await bob.ok("DELETE", f"/v1/conversations/{conversation}") == {"status": "deleted"}
    assert await bob.ok("DELETE", f"/v1/entities/{entity}") == {"status": "deleted"}

    assert (await alice.ok("GET", f"/v1/conversations/{conversation}"))["id"] == conversation
    assert (await alice.ok("GET", f"/v1/entities/{entity}"))["id"] == entity


async def test_entity_delete_twice_and_api_key_rules(alice: Api) -> None:
    """Entities follow W2; API keys keep the spec's rule (K5): revoking twice is 200,
    an unknown key id is 404, so a mistyped id never looks revoked."""
    entity = (await alice.ok("POST", "/v1/entities", 201, json={"name": "E", "type": "t"}))["id"]
    for _ in range(2):
        assert await alice.ok("DELETE", f"/v1/entities/{entity}") == {"status": "deleted"}
    assert_error(await alice.get(f"/v1/entities/{entity}"), 404)

    key = await alice.ok("POST", "/v1/auth/api-keys", 201, json={"label": "ci"})
    for _ in range(2):
        assert await alice.ok("DELETE", f"/v1/auth/api-keys/{key['id']}") == {"status": "revoked"}
    assert_error(await alice.delete(f"/v1/auth/api-keys/{UNKNOWN_ID}"), 404)


@pytest.mark.parametrize(
    "body",
    [
        {"toolName": "clock", "input": "{}"},
        {"toolName": "clock", "input": "{}", "output": "12:00", "status": "success"},
        {"toolName": "clock", "input": "{}", "stepId": None, "durationMs": 3},
    ],
)
async def test_tool_call_without_step_is_201(alice: Api, body: dict[str, Any]) -> None:
    call = await alice.ok("POST", "/v1/reasoning/tool-calls", 201, json=body)

    assert call["toolName"] == "clock" and call["id"]
    assert "stepId" not in call


async def test_tool_call_with_a_step_links_it_and_an_unknown_step_is_404(
    root: SQLiteBackend, alice: Api
) -> None:
    conversation = (await alice.ok("POST", "/v1/conversations", 201))["id"]
    step = await alice.ok(
        "POST",
        "/v1/reasoning/steps",
        201,
        json={"conversationId": conversation, "reasoning": "r", "actionTaken": "a"},
    )
    linked = await alice.ok(
        "POST",
        "/v1/reasoning/tool-calls",
        201,
        json={"toolName": "t", "input": "{}", "stepId": step["id"]},
    )
    before = root.store.run_sync(root.store.counts)

    message = assert_error(
        await alice.post(
            "/v1/reasoning/tool-calls", json={"toolName": "t", "input": "{}", "stepId": UNKNOWN_ID}
        ),
        404,
    )

    assert linked["stepId"] == step["id"]
    assert UNKNOWN_ID in message
    assert root.store.run_sync(root.store.counts) == before
    trace = await alice.ok("GET", f"/v1/reasoning/trace/{conversation}")
    assert [c["id"] for c in trace["toolCalls"]] == [linked["id"]]


async def test_cypher_params_nested_900_deep_are_400(root: SQLiteBackend, alice: Api) -> None:
    deep: Any = 1
    for _ in range(900):
        deep = {"a": deep}
    for params in ({"p": deep}, {"p": [deep]}):
        message = assert_error(
            await alice.post(
                "/v1/query", json={"cypher": "MATCH (n) RETURN $p AS p LIMIT 1", "params": params}
            ),
            400,
        )
        assert "params" in message and "nested deeper" in message
