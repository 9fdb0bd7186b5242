"""Silver and Gold graph behaviour: exact identity, search, traversal and explicit merges."""

from __future__ import annotations

from typing import Any

from .support import Bridge


async def _add(b: Bridge, name: str, type_: str = "PERSON", **extra: Any) -> str:
    return str((await b.ok("add_entity", name=name, entity_type=type_, **extra))["id"])


async def _names(b: Bridge, method: str, **body: Any) -> list[str]:
    return [e["name"] for e in await b.ok(method, **body)]


async def test_identity_is_the_exact_name_and_type_pair(bridge: Bridge) -> None:
    first = await bridge.ok("add_entity", name="Mercury", entity_type="OBJECT")
    again = await bridge.ok(
        "add_entity", name="Mercury", entity_type="OBJECT", description="a metal"
    )
    planet = await bridge.ok("add_entity", name="Mercury", entity_type="LOCATION")
    lower = await bridge.ok("add_entity", name="Mercury", entity_type="person")
    assert again["id"] == first["id"] and again["description"] == "a metal"
    assert len({first["id"], planet["id"], lower["id"]}) == 3 and lower["type"] == "person"
    # Names that entity resolution would equate stay apart on the bridge.
    ids = {await _add(bridge, n, "ORGANIZATION") for n in ("TechCorp", "TechCorps", "techcorp")}
    assert len(ids) == 3
    assert first["description"] is None and first["canonical_name"] is None


async def test_search_puts_the_exact_name_first_and_drops_the_unrelated(bridge: Bridge) -> None:
    await _add(bridge, "Alice Johnsonville", description="Alice Johnson's town")
    await _add(bridge, "Alice Johnson", description="Engineer")
    await _add(bridge, "Bob", description="Plumber")
    found = await _names(bridge, "search_entities", query="Alice Johnson", limit=10)
    assert found[0] == "Alice Johnson" and "Bob" not in found
    assert len(await bridge.ok("search_entities", query="Alice", limit=1)) == 1
    assert await bridge.ok("search_entities", query="quantum cryptography", limit=10) == []


async def test_preferences_search_filters_category_before_the_limit(bridge: Bridge) -> None:
    for category, text in [
        ("language", "Prefers Python over Java"),
        ("food", "Likes Python-shaped pasta"),
        ("language", "Writes Python daily"),
    ]:
        await bridge.ok("add_preference", category=category, preference=text)
    only = await bridge.ok("search_preferences", query="Python", category="language", limit=1)
    assert [p["category"] for p in only] == ["language"]
    everything = await bridge.ok("search_preferences", query="python", limit=10)
    assert len(everything) == 3
    assert await bridge.ok("search_preferences", query="quantum physics", limit=10) == []


async def test_related_entities_follow_both_directions_and_a_type(bridge: Bridge) -> None:
    alice, bob, acme, sf = (
        await _add(bridge, "Alice"),
        await _add(bridge, "Bob"),
        await _add(bridge, "Acme", "ORGANIZATION"),
        await _add(bridge, "SF", "LOCATION"),
    )
    await bridge.ok(
        "add_relationship", source_id=alice, target_id=acme, relationship_type="WORKS_AT"
    )
    await bridge.ok("add_relationship", source_id=bob, target_id=alice, relationship_type="KNOWS")
    await bridge.ok(
        "add_relationship", source_id=acme, target_id=sf, relationship_type="LOCATED_AT"
    )
    assert sorted(await _names(bridge, "get_related_entities", entity_id=alice)) == ["Acme", "Bob"]
    knows = await _names(bridge, "get_related_entities", entity_id=alice, relationship_type="KNOWS")
    assert knows == ["Bob"]
    two = await _names(bridge, "get_related_entities", entity_id=alice, depth=2)
    assert sorted(two) == ["Acme", "Bob", "SF"]
    lonely = await _add(bridge, "Lonely")
    assert await bridge.ok("get_related_entities", entity_id=lonely, depth=3) == []


async def test_relationships_upsert_and_refuse_self_loops(bridge: Bridge) -> None:
    a, b = await _add(bridge, "A"), await _add(bridge, "B")
    first = await bridge.ok("add_relationship", source_id=a, target_id=b, relationship_type="KNOWS")
    again = await bridge.ok("add_relationship", source_id=a, target_id=b, relationship_type="KNOWS")
    other = await bridge.ok("add_relationship", source_id=a, target_id=b, relationship_type="LIKES")
    assert first["id"] == again["id"] != other["id"]
    await bridge.error("add_relationship", 400, source_id=a, target_id=a, relationship_type="X")
    graph = await bridge.ok("get_entity_graph")
    assert sorted(e["type"] for e in graph["edges"]) == ["KNOWS", "LIKES"]


async def test_merge_keeps_the_target_with_both_entities_edges(bridge: Bridge) -> None:
    alice = await _add(bridge, "Alice Johnson")
    short = await _add(bridge, "A. Johnson")
    acme, bob = await _add(bridge, "Acme", "ORGANIZATION"), await _add(bridge, "Bob")
    await bridge.ok(
        "add_relationship", source_id=alice, target_id=acme, relationship_type="WORKS_AT"
    )
    await bridge.ok("add_relationship", source_id=bob, target_id=short, relationship_type="KNOWS")
    merged = await bridge.ok(
        "merge_duplicate_entities", source_id=short, target_id=alice, canonical_name="AJ"
    )
    assert merged["id"] == alice and merged["canonical_name"] == "AJ"
    assert sorted(await _names(bridge, "get_related_entities", entity_id=alice)) == ["Acme", "Bob"]
    assert "A. Johnson" not in await _names(bridge, "list_entities")
    assert "A. Johnson" not in await _names(bridge, "search_entities", query="Johnson", limit=10)
    assert (await bridge.ok("get_entity_by_name", name="A. Johnson"))["id"] == alice
    assert (await bridge.ok("get_entity_by_name", name="AJ"))["id"] == alice
    await bridge.error("merge_duplicate_entities", 400, source_id=alice, target_id=alice)
    await bridge.error("merge_entities", 400, source_id=alice, target_id=alice)


async def test_entity_feedback_history_and_updates(bridge: Bridge) -> None:
    alice = await _add(bridge, "Alice", description="old")
    conv = await bridge.ok("create_conversation", user_id="u")
    said = await bridge.ok("add_message", session_id=conv["id"], role="user", content="Alice came")
    history = await bridge.ok("get_entity_history", entity_id=alice)
    assert [(m["message_id"], m["conversation_id"]) for m in history["mentions"]] == [
        (said["id"], conv["id"])
    ]
    feedback = await bridge.ok("set_entity_feedback", entity_id=alice, user_score=1, confirmed=True)
    assert feedback == {"id": alice, "updated": True}
    await bridge.error("set_entity_feedback", 400, entity_id=alice, user_score=1.01, confirmed=True)
    renamed = await bridge.ok("update_entity", entity_id=alice, name="Alicia")
    assert (renamed["name"], renamed["description"]) == ("Alicia", "old")
    unchanged = await bridge.ok("update_entity", entity_id=alice)
    assert unchanged == renamed
    await bridge.void("delete_entity", entity_id=alice)
    await bridge.error("get_entity", 404, entity_id=alice)
    assert await bridge.ok("get_entity_by_name", name="Alicia") is None


async def test_list_entities_filters_type_ignoring_case_and_caps(bridge: Bridge) -> None:
    for name in ("P1", "P2", "P3"):
        await _add(bridge, name)
    await _add(bridge, "Org", "ORGANIZATION")
    assert await _names(bridge, "list_entities", type="person") == ["P1", "P2", "P3"]
    assert len(await bridge.ok("list_entities", limit=2)) == 2


async def test_facts_keep_their_strings(bridge: Bridge) -> None:
    fact = await bridge.ok("add_fact", subject="Café 世界", predicate="LOCATED_IN", obj="París")
    assert (fact["subject"], fact["object"]) == ("Café 世界", "París")
    again = await bridge.ok("add_fact", subject="Café 世界", predicate="LOCATED_IN", obj="París")
    assert again["id"] != fact["id"]
