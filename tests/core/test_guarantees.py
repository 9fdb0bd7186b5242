"""The guarantees of tools mode (§5.4–§5.5) in a real tool loop on the SQLite engine."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from backends.sqlite import SQLiteBackend
from nams_local import Scope
from nams_local.integrations import (
    EnsureStoredResult,
    FallbackInput,
    LoopResult,
    MemoryConfig,
    MemoryToolSet,
    ScriptedChatModel,
    ScriptedReply,
    StoreInput,
    Tool,
    ToolCallRequest,
    ToolLoop,
    build_memory_tools,
    enforce_query_memory,
    ensure_memory_stored,
    named_tool,
)
from nams_local.integrations.guarantees import COPIED_TOOL_SET
from tests.recording_logger import RecordingLogger

from .wrappers import Faulty

FORCED = named_tool("query_memory")


def clock() -> Tool:
    return Tool("clock", "The time.", {"type": "object", "properties": {}}, lambda _: "12:00")


def call(name: str, arguments: dict[str, Any] | None = None, n: int = 0) -> ScriptedReply:
    request = ToolCallRequest(f"{name}-{n}", name, json.dumps(arguments or {}))
    return ScriptedReply(tool_calls=[request])


def memory_tools(backend: Any, logger: RecordingLogger) -> MemoryToolSet:
    return build_memory_tools(backend, MemoryConfig(logger=logger), Scope("u1"))


def with_clock(tools: MemoryToolSet) -> dict[str, Tool]:
    return {**tools, "clock": clock()}


async def test_a_model_that_never_queries_is_forced_after_the_grace_steps(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    tools = memory_tools(engine, logger)
    model = ScriptedChatModel(
        [
            call("clock", n=0),
            call("clock", n=1),
            call("clock", n=2),
            call("query_memory", {"query": "tea"}),
            "done",
        ]
    )
    loop = ToolLoop(
        model, with_clock(tools), prepare_step=enforce_query_memory(grace_steps=3), max_steps=6
    )
    result = await loop.run("what do I drink?")

    choices = [c.tool_choice for c in model.calls]
    assert choices == ["required", "required", "required", FORCED, "auto"]
    assert result.steps[3].tool_results[0].output == {
        "found": False,
        "message": "No relevant memories found.",
        "memories": [],
    }
    assert result.text == "done"


async def test_grace_steps_zero_forces_the_first_step(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    model = ScriptedChatModel([call("query_memory", {"query": "tea"}), "ok"])
    loop = ToolLoop(
        model, memory_tools(engine, logger), prepare_step=enforce_query_memory(grace_steps=0)
    )
    await loop.run("hi")
    assert [c.tool_choice for c in model.calls] == [FORCED, "auto"]


async def test_constraints_drop_once_query_memory_ran(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    model = ScriptedChatModel(
        [call("query_memory", {"query": "tea"}), call("clock"), call("clock", n=1), "answer"]
    )
    loop = ToolLoop(
        model,
        with_clock(memory_tools(engine, logger)),
        prepare_step=enforce_query_memory(),
        tool_choice="none",
    )
    await loop.run("hi")
    assert [c.tool_choice for c in model.calls] == ["required", "none", "none", "none"]


def test_enforce_query_memory_decides_from_the_completed_steps() -> None:
    prepare = enforce_query_memory(grace_steps=2)
    queried = [{"tool_calls": [{"tool_name": "clock"}]}, {"toolCalls": [{"toolName": "x"}]}]
    assert prepare(0, []) == {"tool_choice": "required"}
    assert prepare(1, queried) == {"tool_choice": "required"}
    assert prepare(2, queried) == {"tool_choice": FORCED}
    assert prepare(7, [{"tool_calls": [ToolCallRequest("1", "query_memory")]}]) is None
    assert prepare(7, [{"toolCalls": [{"toolName": "query_memory"}]}]) is None


async def test_a_turn_the_model_did_not_store_is_stored_as_an_interaction(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    tools = memory_tools(engine, logger)
    outcomes: list[EnsureStoredResult] = []
    guard = ensure_memory_stored(tools)

    async def on_finish(result: LoopResult) -> None:
        outcomes.append(await guard(result))

    model = ScriptedChatModel([call("query_memory", {"query": "tea"}), "  You like green tea. "])
    await ToolLoop(model, tools, on_finish=on_finish).run("what do I like?")

    assert outcomes == [
        {"stored": True, "input": {"content": "You like green tea.", "type": "interaction"}}
    ]
    [conversation] = await engine.list_conversations(user_id="u1")
    [message] = await engine.list_messages(conversation.id)
    assert (message.role, message.content) == ("assistant", "You like green tea.")


async def test_a_turn_that_called_store_memory_is_already_stored(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    tools = memory_tools(engine, logger)
    model = ScriptedChatModel(
        [call("store_memory", {"content": "Likes tea", "type": "fact"}), "ok"]
    )
    result = await ToolLoop(model, tools).run("I like tea")
    guard = ensure_memory_stored(tools)
    assert await guard(result) == {"stored": False, "reason": "already-stored"}
    finished_turn = {"text": "ok", "steps": [{"toolCalls": [{"toolName": "store_memory"}]}]}
    assert await guard(finished_turn) == {"stored": False, "reason": "already-stored"}
    assert [e.name for e in await engine.list_entities()] == ["Likes tea"]


async def test_nothing_to_store(engine: SQLiteBackend, logger: RecordingLogger) -> None:
    tools = memory_tools(engine, logger)
    seen: list[FallbackInput] = []

    def blank(turn: FallbackInput) -> StoreInput | None:
        seen.append(turn)
        return {"content": "   ", "type": "fact"}

    empty = {"text": "   ", "tool_calls": [{"name": "clock"}, {"name": "clock"}]}
    assert await ensure_memory_stored(tools)(empty) == {
        "stored": False,
        "reason": "nothing-to-store",
    }
    assert await ensure_memory_stored(tools, blank)({"text": " hi "}) == {
        "stored": False,
        "reason": "nothing-to-store",
    }
    assert seen == [FallbackInput(text="hi", tool_names=[])]
    assert await engine.list_conversations() == []


async def test_a_fallback_can_store_a_fact_through_the_bound_client(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    tools = memory_tools(engine, logger)

    async def as_fact(turn: FallbackInput) -> StoreInput:
        return {"content": f"Said: {turn.text}", "type": "fact", "confidence": 0.9}

    outcome = await ensure_memory_stored(tools, as_fact)({"text": "Alex uses Neovim"})
    assert outcome == {
        "stored": True,
        "input": {"content": "Said: Alex uses Neovim", "type": "fact", "confidence": 0.9},
    }
    [entity] = await engine.list_entities(type="fact")
    assert entity.name == "Said: Alex uses Neovim"


async def test_a_failed_store_returns_failed_and_logs(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    tools = memory_tools(Faulty(engine, {"add_message": "raise"}), logger)
    outcome = await ensure_memory_stored(tools)({"text": "answer"})
    assert outcome == {"stored": False, "reason": "failed"}
    assert [(level, m) for level, m, _ in logger.records] == [
        ("error", "ensureMemoryStored failed to persist the turn")
    ]


@pytest.mark.parametrize(
    "make_copy",
    [lambda t: {**t}, dict, copy.copy, lambda t: MemoryToolSet(t), lambda t: list(t.values())],
)
def test_a_copied_tool_set_is_rejected_at_construction(
    engine: SQLiteBackend, logger: RecordingLogger, make_copy: Any
) -> None:
    tools = memory_tools(engine, logger)
    with pytest.raises(TypeError) as caught:
        ensure_memory_stored(make_copy(tools))
    assert str(caught.value) == COPIED_TOOL_SET
    ensure_memory_stored(tools)  # the original is accepted


async def test_both_guarantees_hold_in_a_streamed_loop(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    tools = memory_tools(engine, logger)
    await tools["store_memory"].run({"content": "Alex drinks green tea", "type": "fact"})
    outcomes: list[EnsureStoredResult] = []
    guard = ensure_memory_stored(tools)

    async def on_finish(result: LoopResult) -> None:
        outcomes.append(await guard(result))

    model = ScriptedChatModel([call("query_memory", {"query": "Alex tea"}), "Green tea."])
    loop = ToolLoop(
        model, tools, prepare_step=enforce_query_memory(grace_steps=0), on_finish=on_finish
    )
    events = [event async for event in loop.stream("What does Alex drink?")]

    assert [c.tool_choice for c in model.calls] == [FORCED, "auto"]
    [recalled] = [e.tool_result for e in events if e.type == "tool-result"]
    assert recalled is not None and recalled.output["found"] is True
    assert outcomes == [{"stored": True, "input": {"content": "Green tea.", "type": "interaction"}}]
    [conversation] = await engine.list_conversations(user_id="u1")
    assert [m.content for m in await engine.list_messages(conversation.id)] == ["Green tea."]
