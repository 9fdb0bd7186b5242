"""The legacy memory concepts from Python (``SQLiteBackend.legacy``), without the bridge.

They are part of the engine's data model: a session's messages are ordinary messages that
the ``MemoryBackend`` methods see, legacy entities live in the same graph, and clearing one
workspace leaves the others of the same store alone.
"""

from __future__ import annotations

from backends.sqlite import SQLiteBackend
from nams_local.models import NewMessage, ToolCallStatus


async def test_session_messages_are_engine_messages(root: SQLiteBackend) -> None:
    legacy = root.legacy
    await legacy.add_session_messages(
        "user-42", [NewMessage(role="user", content="Paris trip", metadata={"n": 1})]
    )
    await legacy.add_session_message("user-42", "assistant", "")
    transcript = await legacy.get_session("user-42")
    assert transcript.exists and [m.content for m in transcript.messages] == ["Paris trip", ""]
    newest_first = await root.list_messages(transcript.conversation_id)
    assert [m.content for m in newest_first] == ["", "Paris trip"]
    hits = await root.search_messages(transcript.conversation_id, "Paris")
    assert [m.content for m in hits.items] == ["Paris trip"]
    found = await legacy.search_messages("paris", threshold=0.5)
    assert [(m.content, m.score) for m in found] == [("Paris trip", 1.0)]


async def test_preferences_facts_and_traces_from_python(root: SQLiteBackend) -> None:
    legacy = root.legacy
    await legacy.add_preference("food", "Likes spicy ramen", context="lunch")
    await legacy.add_fact("Alice", "WORKS_AT", "Acme")
    assert [p.preference for p in await legacy.search_preferences("ramen")] == ["Likes spicy ramen"]
    assert [f.object for f in await legacy.list_facts(about="Alice")] == ["Acme"]
    trace = await legacy.start_trace("agent", "Book a table")
    step = await legacy.add_trace_step(trace.id, thought="find a place")
    await legacy.record_trace_tool_call(
        step.id, "search", {"q": "ramen"}, result={"n": 3}, status=ToolCallStatus.FAILURE
    )
    done = await legacy.complete_trace(trace.id, outcome="booked", success=True)
    assert done.steps[0].tool_calls[0].result == {"n": 3}
    (stats,) = await legacy.tool_stats()
    assert (stats.name, stats.failed_calls, stats.success_rate) == ("search", 1, 0.0)
    assert [t.id for t in await legacy.similar_traces("table booking")] == [trace.id]


async def test_exact_entities_share_the_graph_and_merges_leave_same_as(
    root: SQLiteBackend,
) -> None:
    legacy = root.legacy
    source = await legacy.upsert_entity("A. Johnson", "PERSON")
    target = await legacy.upsert_entity("Alice Johnson", "PERSON")
    merged = await legacy.merge_entities(source.id, target.id, canonical_name="Alice")
    assert (merged.id, merged.canonical_name) == (target.id, "Alice")
    details = await root.get_entity(source.id)
    assert [(r.type, r.target_id) for r in details.relationships] == [("SAME_AS", target.id)]
    assert [e.id for e in await root.list_entities()] == [target.id]


async def test_clearing_a_workspace_leaves_the_others(root: SQLiteBackend) -> None:
    other = root.for_workspace("other")
    for engine in (root, other):
        await engine.legacy.add_session_message("s", "user", "hello")
        await engine.legacy.upsert_entity("Alice", "PERSON")
        await engine.legacy.add_preference("c", "p")
        await engine.legacy.start_trace("s", "task")
    await root.legacy.clear_workspace()
    assert await root.legacy.list_sessions() == []
    assert await root.list_entities() == []
    assert await root.legacy.list_preferences() == []
    assert await root.legacy.list_traces() == []
    assert [s.message_count for s in await other.legacy.list_sessions()] == [1]
    assert [e.name for e in await other.list_entities()] == ["Alice"]
    assert len(await other.legacy.list_traces()) == 1
