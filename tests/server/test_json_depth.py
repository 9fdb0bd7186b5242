"""One depth bound for every stored JSON value, honoured by the write and by every read.

Issue 15, item 1: on main at 295f78a, message metadata nested 254 deep was stored (201) and
from then on every list, context and search of the conversation answered 500; from depth
255 the write answered 500 *after* committing the row. Each test here reproduces one part.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from backends.sqlite import SQLiteBackend
from backends.sqlite.stored_json import UNREADABLE_KEY
from nams_local.errors import InvalidInputError
from nams_local.server import create_app
from nams_local.validation import MAX_JSON_DEPTH
from tests.asgi import in_process

from .support import Api, assert_error


def nested(depth: int) -> Any:
    """``{"a": {"a": ... 1}}`` with ``depth`` objects around the scalar."""
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


def nested_text(depth: int) -> str:
    """``nested(depth)`` as JSON text (built directly: encoding 5,000 levels would recurse)."""
    return '{"a":' * depth + "1" + "}" * depth


async def conversation(api: Api) -> str:
    created = await api.ok("POST", "/v1/conversations", 201, json={"user_id": "u1"})
    conversation_id: str = created["id"]
    return conversation_id


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 254, 255, 5000])
async def test_too_deep_message_metadata_is_refused_with_nothing_written(
    alice: Api, depth: int
) -> None:
    """Reproduces: 254 deep was stored (201) and poisoned the conversation; 255 answered 500
    after committing the row. Now: 400 naming the bound, and nothing written."""
    cid = await conversation(alice)
    message = '{"role": "user", "content": "hello", "metadata": ' + nested_text(depth) + "}"
    headers = {"Content-Type": "application/json"}
    response = await alice.post(
        f"/v1/conversations/{cid}/messages", content=message, headers=headers
    )
    assert "deep" in assert_error(response, 400)
    bulk = await alice.post(
        f"/v1/conversations/{cid}/messages/bulk",
        content='{"messages": [' + message + "]}",
        headers=headers,
    )
    assert_error(bulk, 400)
    listed = await alice.ok("GET", f"/v1/conversations/{cid}/messages")
    assert listed["messages"] == []


async def test_metadata_at_the_bound_is_stored_and_read_back(alice: Api) -> None:
    """The bound is inclusive: exactly ``MAX_JSON_DEPTH`` deep is accepted and renders."""
    cid = await conversation(alice)
    await alice.ok(
        "POST",
        f"/v1/conversations/{cid}/messages",
        201,
        json={"role": "user", "content": "hello", "metadata": nested(MAX_JSON_DEPTH)},
    )
    listed = await alice.ok("GET", f"/v1/conversations/{cid}/messages")
    assert listed["messages"][0]["metadata"] == nested(MAX_JSON_DEPTH)


async def test_too_deep_relationship_properties_and_cypher_params_are_refused(
    alice: Api,
) -> None:
    """Reproduces: relationship properties and Cypher params had no depth bound at all."""
    a = await alice.ok("POST", "/v1/entities", 201, json={"name": "Ada", "type": "PERSON"})
    b = await alice.ok("POST", "/v1/entities", 201, json={"name": "Acme", "type": "ORGANIZATION"})
    response = await alice.post(
        "/v1/relationships",
        json={
            "source_id": a["id"],
            "target_id": b["id"],
            "type": "WORKS_AT",
            "properties": nested(MAX_JSON_DEPTH + 1),
        },
    )
    assert_error(response, 400)
    query = await alice.post(
        "/v1/query",
        json={"cypher": "MATCH (n) RETURN n.name LIMIT 1", "params": {"p": nested(300)}},
    )
    assert_error(query, 400)


async def test_the_library_refuses_before_writing(tmp_path: Path) -> None:
    """The same bound in the engine itself (not only the server): an ``InvalidInputError``."""
    async with SQLiteBackend(tmp_path / "m.db", embeddings=False, extraction="off") as store:
        conv = await store.create_conversation("u1")
        with pytest.raises(InvalidInputError):
            await store.add_message(conv.id, "user", "hi", nested(MAX_JSON_DEPTH + 1))
        assert await store.list_messages(conv.id) == []


@pytest.fixture
async def file_app(tmp_path: Path) -> AsyncIterator[tuple[Api, Path]]:
    db = tmp_path / "memory.db"
    async with (
        SQLiteBackend(db, embeddings=False, extraction="off") as root,
        in_process(create_app(root)) as client,
    ):
        yield Api(client, "alice-token"), db


@pytest.mark.parametrize("depth", [254, 100_000])
async def test_a_stored_row_too_deep_to_render_never_fails_a_read(
    file_app: tuple[Api, Path], depth: int, caplog: pytest.LogCaptureFixture
) -> None:
    """Reproduces: a row written by an older version (254 deep; or deeper than Python's
    JSON parser can recurse) made every list, context and search 500, also after restart.
    Now the row renders with its metadata replaced by a marker, and a warning is logged."""
    api, db = file_app
    cid = await conversation(api)
    await api.ok(
        "POST",
        f"/v1/conversations/{cid}/messages",
        201,
        json={"role": "user", "content": "the deep message", "metadata": {"k": 1}},
    )
    with sqlite3.connect(db) as raw:
        raw.execute("UPDATE messages SET metadata = ?", (nested_text(depth),))
    raw.close()
    with caplog.at_level(logging.WARNING, logger="nams_local"):
        listed = await api.ok("GET", f"/v1/conversations/{cid}/messages")
        context = await api.get(f"/v1/conversations/{cid}/context")
        searched = await api.ok(
            "POST", f"/v1/conversations/{cid}/search", json={"query": "deep message"}
        )
        user_wide = await api.ok("POST", "/v1/users/u1/messages/search", json={"query": "deep"})
    [message] = listed["messages"]
    assert set(message["metadata"]) == {UNREADABLE_KEY}
    assert context.status_code == 200, context.text
    assert json.dumps(searched).count(UNREADABLE_KEY) >= 1
    assert json.dumps(user_wide).count(UNREADABLE_KEY) >= 1
    assert any("cannot be rendered" in r.getMessage() for r in caplog.records)
