"""Bronze behaviour through the bridge: order, fidelity, sessions, deletes, search."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

from .support import Bridge

LONG = "x" * 10_000 + "é"
TRICKY = 'Family 👨‍👩‍👧 ❤️ tab\there\nnewline "quotes" \\back\\slash\r\n  spaced  '
NESTED: dict[str, Any] = {
    "n": 42,
    "f": 1.5,
    "ok": True,
    "no": None,
    "list": [1, "a", {"b": False}],
    "o": {},
}


async def _contents(b: Bridge, session: str, **extra: object) -> list[str]:
    conv = await b.ok("get_conversation", session_id=session, **extra)
    return [m["content"] for m in conv["messages"]]


async def test_content_and_metadata_round_trip_exactly(bridge: Bridge) -> None:
    sent = [("", {}), (LONG, NESTED), (TRICKY, {"k": "v"})]
    for content, metadata in sent:
        echoed = await bridge.ok(
            "add_message", session_id="s", role="user", content=content, metadata=metadata
        )
        assert (echoed["content"], echoed["metadata"]) == (content, metadata)
    plain = await bridge.ok("add_message", session_id="s", role="system", content="no meta")
    assert plain["metadata"] == {} and plain["role"] == "system"
    stored = (await bridge.ok("get_conversation", session_id="s"))["messages"]
    assert [(m["content"], m["metadata"]) for m in stored] == [*sent, ("no meta", {})]


async def test_insertion_order_survives_rapid_inserts_and_deletes(bridge: Bridge) -> None:
    ids = [
        (await bridge.ok("add_message", session_id="s", role="user", content=f"m{i:03d}"))["id"]
        for i in range(105)
    ]
    for gone in (ids[0], ids[50], ids[-1]):
        assert await bridge.ok("delete_message", message_id=gone) == {"deleted": True}
    expected = [f"m{i:03d}" for i in range(105) if i not in (0, 50, 104)]
    assert await _contents(bridge, "s") == expected
    stamps = [
        datetime.fromisoformat(m["timestamp"])
        for m in (await bridge.ok("get_conversation", session_id="s"))["messages"]
    ]
    assert all(a < b for a, b in itertools.pairwise(stamps))
    now = datetime.now(UTC)
    assert now - timedelta(seconds=60) < stamps[0] <= stamps[-1] < now + timedelta(seconds=5)


async def test_limit_returns_the_oldest_messages(bridge: Bridge) -> None:
    for word in ("one", "two", "three"):
        await bridge.ok("add_message", session_id="s", role="user", content=word)
    assert await _contents(bridge, "s", limit=2) == ["one", "two"]
    assert await _contents(bridge, "s", limit=100) == ["one", "two", "three"]


async def test_an_unknown_session_reads_empty_creates_nothing_and_keeps_its_id(
    bridge: Bridge,
) -> None:
    first = await bridge.ok("get_conversation", session_id="later")
    again = await bridge.ok("get_conversation", session_id="later")
    other = await bridge.ok("get_conversation", session_id="elsewhere")
    assert first["messages"] == [] and first["session_id"] == "later"
    assert first["id"] == again["id"] != other["id"]
    assert await bridge.ok("list_sessions", limit=100) == []
    await bridge.ok("add_message", session_id="later", role="user", content="now it exists")
    created = await bridge.ok("get_conversation", session_id="later")
    assert created["id"] == first["id"] and len(created["messages"]) == 1


async def test_sessions_are_isolated_and_counted_live(bridge: Bridge) -> None:
    first = await bridge.ok("add_message", session_id="a", role="user", content="A1")
    await bridge.ok("add_message", session_id="a", role="assistant", content="A2")
    await bridge.ok("add_message", session_id="b", role="user", content="B1")
    await bridge.ok("delete_message", message_id=first["id"])
    counts = {s["session_id"]: s["message_count"] for s in await bridge.ok("list_sessions")}
    assert counts == {"a": 1, "b": 1}
    assert await _contents(bridge, "a") == ["A2"] and await _contents(bridge, "b") == ["B1"]
    assert len(await bridge.ok("list_sessions", limit=1)) == 1


async def test_clear_session_removes_only_that_session(bridge: Bridge) -> None:
    entity = await bridge.ok("add_entity", name="Kept", entity_type="OBJECT")
    for session in ("a", "b"):
        await bridge.ok("add_message", session_id=session, role="user", content=session)
    await bridge.void("clear_session", session_id="a")
    await bridge.void("clear_session", session_id="a")
    assert [s["session_id"] for s in await bridge.ok("list_sessions")] == ["b"]
    assert await _contents(bridge, "a") == []
    assert (await bridge.ok("get_entity_by_name", name="Kept"))["id"] == entity["id"]
    await bridge.ok("add_message", session_id="a", role="user", content="again")
    assert await _contents(bridge, "a") == ["again"]


async def test_a_conversation_id_is_also_its_session(bridge: Bridge) -> None:
    conv = await bridge.ok("create_conversation", user_id="alice")
    assert conv["session_id"] == conv["id"] and conv["user_id"] == "alice"
    await bridge.ok("add_message", session_id=conv["id"], role="user", content="hello")
    bulk = await bridge.ok(
        "bulk_add_messages",
        conversation_id=conv["id"],
        messages=[{"role": "user", "content": f"b{i}"} for i in range(3)],
    )
    assert [m["content"] for m in bulk] == ["b0", "b1", "b2"]
    assert await _contents(bridge, conv["id"]) == ["hello", "b0", "b1", "b2"]
    context = await bridge.ok("get_context", conversation_id=conv["id"])
    assert [m["content"] for m in context["recent_messages"]] == ["hello", "b0", "b1", "b2"]
    sessions = await bridge.ok("list_sessions")
    assert [(s["session_id"], s["message_count"]) for s in sessions] == [(conv["id"], 4)]


async def test_list_conversations_is_newest_first_and_delete_is_idempotent(
    bridge: Bridge,
) -> None:
    await bridge.ok("add_message", session_id="by-message", role="user", content="x")
    old = await bridge.ok("create_conversation", user_id="u")
    new = await bridge.ok("create_conversation", user_id="u")
    listed = await bridge.ok("list_conversations")
    assert [c["id"] for c in listed][:2] == [new["id"], old["id"]] and len(listed) == 3
    assert len(await bridge.ok("list_conversations", limit=1)) == 1
    await bridge.void("delete_conversation", conversation_id=old["id"])
    await bridge.void("delete_conversation", conversation_id=old["id"])
    assert old["id"] not in [s["session_id"] for s in await bridge.ok("list_sessions")]


async def test_search_scores_by_shared_words_with_an_inclusive_threshold(bridge: Bridge) -> None:
    await bridge.ok("add_message", session_id="a", role="user", content="I love Python programming")
    await bridge.ok("add_message", session_id="a", role="user", content="The weather is sunny")
    await bridge.ok("add_message", session_id="b", role="user", content="Python is great")
    gone = await bridge.ok("add_message", session_id="b", role="user", content="Python deleted")
    await bridge.ok("delete_message", message_id=gone["id"])

    async def search(**body: object) -> list[str]:
        found = await bridge.ok("search_messages", **body)
        return [m["content"] for m in found]

    everywhere = await search(query="Python programming", limit=10, threshold=0.0)
    assert everywhere == ["I love Python programming", "Python is great"]
    assert await search(query="Python programming", limit=10, threshold=1.0) == everywhere[:1]
    assert await search(query="Python", session_id="b", limit=10, threshold=0.0) == [
        "Python is great"
    ]
    assert await search(query="Python", limit=1, threshold=0.0) == everywhere[:1]
    assert await search(query="quantum cryptography", limit=10, threshold=0.99) == []
    assert await search(query="Python", session_id="nobody", limit=10, threshold=0.0) == []
