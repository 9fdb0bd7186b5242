"""Transport rules of the bridge: verbs, unknown routes, bodies, types, and its own store."""

from __future__ import annotations

import httpx

from backends.sqlite import SQLiteBackend

from .support import Bridge


async def test_only_post_and_only_known_methods(http: httpx.AsyncClient, bridge: Bridge) -> None:
    wrong_verb = await http.get("/bridge/setup")
    assert (wrong_verb.status_code, wrong_verb.json()) == (405, {"error": "use POST"})
    unknown = await http.post("/bridge/no_such_method", json={})
    assert (unknown.status_code, unknown.json()) == (
        404,
        {"error": "Unknown method: no_such_method"},
    )
    nested = await http.post("/bridge/setup/extra", json={})
    assert nested.status_code == 404 and "error" in nested.json()


async def test_bodies_must_be_json_objects_and_empty_means_none(http: httpx.AsyncClient) -> None:
    empty = await http.post("/bridge/setup", content=b"")
    assert empty.json()["ok"] is True
    for raw in (b"{not json", b"[1, 2]", b'"text"'):
        refused = await http.post("/bridge/list_sessions", content=raw)
        assert refused.status_code == 400 and isinstance(refused.json()["error"], str)


async def test_wrong_types_and_missing_keys_are_400_and_write_nothing(bridge: Bridge) -> None:
    await bridge.error("add_message", 400, session_id="s", role="user")
    await bridge.error("add_message", 400, session_id="s", role="robot", content="x")
    await bridge.error("add_message", 400, session_id="s", role="user", content=5)
    await bridge.error("add_message", 400, session_id="s", role="user", content="x", metadata=[])
    await bridge.error("list_sessions", 400, limit="5")
    await bridge.error("list_sessions", 400, limit=True)
    await bridge.error("complete_trace", 400, trace_id="t", success="false")
    assert await bridge.ok("list_sessions") == []


async def test_unknown_keys_are_ignored_and_falsy_values_kept(bridge: Bridge) -> None:
    reply = await bridge.ok(
        "add_message", session_id="s", role="user", content="", metadata={}, future_key=1
    )
    assert (reply["content"], reply["metadata"]) == ("", {})


async def test_bulk_adds_above_100_are_refused_whole(bridge: Bridge) -> None:
    conv = (await bridge.ok("create_conversation", user_id="u"))["id"]
    too_many = [{"role": "user", "content": str(i)} for i in range(101)]
    await bridge.error("bulk_add_messages", 400, conversation_id=conv, messages=too_many)
    await bridge.error(
        "bulk_add_messages",
        400,
        conversation_id=conv,
        messages=[{"role": "user", "content": "ok"}, {"role": "nobody", "content": "bad"}],
    )
    assert (await bridge.ok("get_conversation", session_id=conv))["messages"] == []


async def test_cypher_is_read_only_with_positional_rows(bridge: Bridge) -> None:
    for name in ("A", "B"):
        await bridge.ok("add_entity", name=name, entity_type="PERSON")
    result = await bridge.ok(
        "cypher_query", cypher="MATCH (n) RETURN n.name AS name ORDER BY name", params={}
    )
    assert result["columns"] == ["name"] and result["rows"] == [["A"], ["B"]]
    await bridge.error("cypher_query", 400, cypher="MATCH (n) DETACH DELETE n", params={})
    await bridge.error("cypher_query", 400, cypher="CREATE (n:Person) RETURN n", params={})


async def test_the_bridge_has_its_own_store(
    http: httpx.AsyncClient, bridge: Bridge, root: SQLiteBackend
) -> None:
    """``clear_all_data`` cannot reach the memory ``/v1`` serves, nor the other way round."""
    real = await root.create_conversation(user_id="real-user")
    await root.add_message(real.id, "user", "real memory")
    await root.add_entity("Real Entity", "PERSON")
    await bridge.ok("add_message", session_id="s", role="user", content="bridge memory")
    await bridge.void("clear_all_data")
    assert [m.content for m in await root.list_messages(real.id)] == ["real memory"]
    assert [e.name for e in await root.list_entities()] == ["Real Entity"]
    assert all(c.id == real.id for c in await root.list_conversations())
    v1 = await http.get("/v1/conversations", headers={"Authorization": "Bearer t"})
    assert v1.status_code == 200 and v1.json()["conversations"] == []


async def test_setup_and_teardown_are_repeatable_and_keep_serving(bridge: Bridge) -> None:
    await bridge.ok("add_message", session_id="s", role="user", content="kept")
    await bridge.void("teardown")
    assert (await bridge.ok("setup"))["protocol_version"] == "0.2.0"
    assert len((await bridge.ok("get_conversation", session_id="s"))["messages"]) == 1


async def test_an_empty_bulk_add_adds_nothing(bridge: Bridge) -> None:
    conv = (await bridge.ok("create_conversation", user_id="u"))["id"]
    assert await bridge.ok("bulk_add_messages", conversation_id=conv, messages=[]) == []
    assert [s["message_count"] for s in await bridge.ok("list_sessions")] == [0]


async def test_messages_never_turn_into_entities_on_the_bridge(bridge: Bridge) -> None:
    """No extraction on the bridge path: only ``add_entity`` makes entities (contract §5.9)."""
    for role in ("user", "assistant"):
        await bridge.ok(
            "add_message", session_id="s", role=role, content="Alice Johnson works at Acme Corp."
        )
    conv = (await bridge.ok("create_conversation", user_id="u"))["id"]
    messages = [{"role": "user", "content": f"Bob Smith met Carol in Paris {i}"} for i in range(12)]
    await bridge.ok("bulk_add_messages", conversation_id=conv, messages=messages)
    assert await bridge.ok("list_entities") == []
    assert await bridge.ok("get_entity_by_name", name="Alice Johnson") is None
    assert await bridge.ok("get_observations", conversation_id=conv) == []
