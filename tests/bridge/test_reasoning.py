"""Silver reasoning and Gold similar traces: numbering, nesting, completion, statistics."""

from __future__ import annotations

from typing import Any

from .support import Bridge


async def _trace(b: Bridge, task: str, session: str = "agent-a") -> str:
    return str((await b.ok("start_trace", session_id=session, task=task))["id"])


async def _call(b: Bridge, step: str, tool: str, status: str, **extra: Any) -> dict[str, Any]:
    reply: dict[str, Any] = await b.ok(
        "record_tool_call", step_id=step, tool_name=tool, arguments={}, status=status, **extra
    )
    return reply


async def test_steps_are_numbered_and_nest_their_tool_calls_in_order(bridge: Bridge) -> None:
    trace = await _trace(bridge, "Find the employer")
    started = await bridge.ok("get_trace_with_steps", trace_id=trace)
    assert (started["outcome"], started["success"], started["completed_at"]) == (None, None, None)
    first = await bridge.ok("add_step", trace_id=trace, thought="think")
    second = await bridge.ok("add_step", trace_id=trace, observation="seen")
    assert (first["step_number"], second["step_number"]) == (1, 2)
    assert (second["thought"], second["action"], second["observation"]) == (None, None, "seen")
    args = {"query": {"nested": [1, 2.5, True, None]}, "empty": {}}
    echoed = await bridge.ok(
        "record_tool_call",
        step_id=first["id"],
        tool_name="search",
        arguments=args,
        result=["any", 1],
        status="error",
        duration_ms=0,
        error="boom",
    )
    assert (echoed["arguments"], echoed["result"], echoed["duration_ms"]) == (args, ["any", 1], 0)
    assert (echoed["status"], echoed["error"]) == ("error", "boom")
    await _call(bridge, first["id"], "lookup", "success", result="")
    full = await bridge.ok("get_trace_with_steps", trace_id=trace)
    assert [s["step_number"] for s in full["steps"]] == [1, 2]
    assert [c["tool_name"] for c in full["steps"][0]["tool_calls"]] == ["search", "lookup"]
    assert full["steps"][0]["tool_calls"][1]["result"] == ""


async def test_completion_keeps_false_and_can_be_repeated(bridge: Bridge) -> None:
    trace = await _trace(bridge, "t")
    await bridge.ok("add_step", trace_id=trace, action="a")
    failed = await bridge.ok("complete_trace", trace_id=trace, outcome="no luck", success=False)
    assert (failed["success"], failed["outcome"]) == (False, "no luck")
    assert failed["completed_at"] is not None and len(failed["steps"]) == 1
    redone = await bridge.ok("complete_trace", trace_id=trace, success=True)
    assert (redone["success"], redone["outcome"]) == (True, None)


async def test_traces_filter_by_session_without_creating_sessions(bridge: Bridge) -> None:
    a1, a2 = await _trace(bridge, "A one"), await _trace(bridge, "A two")
    b1 = await _trace(bridge, "B one", session="agent-b")
    assert {t["id"] for t in await bridge.ok("list_traces", session_id="agent-a")} == {a1, a2}
    assert [t["id"] for t in await bridge.ok("list_traces", session_id="agent-b")] == [b1]
    assert len(await bridge.ok("list_traces", limit=2)) == 2
    assert await bridge.ok("list_sessions") == []


async def test_tool_stats_count_failures_and_rates(bridge: Bridge) -> None:
    step = (await bridge.ok("add_step", trace_id=await _trace(bridge, "t"), action="a"))["id"]
    for status in ("success", "success", "failure", "error", "timeout", "pending", "cancelled"):
        await _call(bridge, step, "search", status, duration_ms=10)
    await _call(bridge, step, "lookup", "success")
    stats = await bridge.ok("get_tool_stats")
    assert [s["name"] for s in stats] == ["search", "lookup"]
    search = stats[0]
    assert (search["total_calls"], search["successful_calls"], search["failed_calls"]) == (7, 2, 3)
    assert search["success_rate"] == 2 / 7 and search["avg_duration_ms"] == 10.0
    only = await bridge.ok("get_tool_stats", tool_name="lookup")
    assert [(s["name"], s["success_rate"], s["avg_duration_ms"]) for s in only] == [
        ("lookup", 1.0, None)
    ]
    await bridge.error(
        "record_tool_call", 400, step_id=step, tool_name="x", arguments={}, status="ok"
    )


async def test_similar_traces_rank_by_task_words_after_the_success_filter(bridge: Bridge) -> None:
    unfinished = await _trace(bridge, "Research Alice at Acme")
    failed = await _trace(bridge, "Research Alice at Acme again")
    await bridge.ok("complete_trace", trace_id=failed, success=False)
    close = await _trace(bridge, "Research Alice's role at Acme", session="other")
    far = await _trace(bridge, "Research the weather")
    for done in (close, far):
        await bridge.ok("complete_trace", trace_id=done, success=True)
    found = await bridge.ok(
        "get_similar_traces", task="Alice role Acme", limit=5, success_only=True
    )
    assert [t["id"] for t in found] == [close]
    anything = await bridge.ok(
        "get_similar_traces", task="Research Alice Acme", limit=5, success_only=False
    )
    assert {t["id"] for t in anything[:3]} == {unfinished, failed, close}
    assert anything[-1]["id"] == far
    capped = await bridge.ok("get_similar_traces", task="Research", limit=2, success_only=False)
    assert len(capped) == 2


async def test_agent_steps_take_tool_calls_and_explain_them(bridge: Bridge) -> None:
    await bridge.ok("add_entity", name="Acme", entity_type="ORGANIZATION")
    conv = (await bridge.ok("create_conversation", user_id="u"))["id"]
    step = await bridge.ok(
        "record_step", conversation_id=conv, reasoning="Check Acme", action_taken="lookup"
    )
    call = await _call(bridge, step["id"], "crm", "timeout", duration_ms=3)
    assert call["status"] == "timeout"
    explained = await bridge.ok("explain_step", step_id=step["id"])
    assert [c["tool_name"] for c in explained["tool_calls"]] == ["crm"]
    assert [e["name"] for e in explained["influenced_entities"]] == ["Acme"]
    trace = await bridge.ok("get_trace_by_conversation", conversation_id=conv)
    assert [s["id"] for s in trace["steps"]] == [step["id"]] and len(trace["tool_calls"]) == 1
    assert [s["id"] for s in await bridge.ok("list_steps", conversation_id=conv)] == [step["id"]]
