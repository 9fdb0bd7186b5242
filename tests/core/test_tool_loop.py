"""ToolLoop: the agent loop around a scripted model and real (sync and async) tools."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nams_local.integrations import (
    LoopEvent,
    LoopResult,
    ScriptedChatModel,
    ScriptedReply,
    StepOverrides,
    StepResult,
    Tool,
    ToolCallRequest,
    ToolLoop,
    current_tool_call_id,
    named_tool,
)

OBJECT = {"type": "object", "properties": {"x": {"type": "integer"}}}


def double_tool() -> Tool:
    return Tool("double", "Doubles x.", OBJECT, lambda args: {"value": args["x"] * 2})


def async_tool() -> Tool:
    async def add_one(args: dict[str, Any]) -> int:
        return int(args["x"]) + 1

    return Tool("add_one", "Adds one.", OBJECT, add_one)


def failing_tool() -> Tool:
    def explode(args: dict[str, Any]) -> None:
        raise RuntimeError("disk on fire")

    return Tool("explode", "Fails.", OBJECT, explode)


def call(call_id: str, name: str, arguments: object) -> ToolCallRequest:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ToolCallRequest(call_id, name, text)


def tool_messages(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}


async def test_runs_sync_and_async_tools_and_feeds_results_back() -> None:
    model = ScriptedChatModel(
        [
            ScriptedReply(
                tool_calls=[call("a", "double", {"x": 4}), call("b", "add_one", {"x": 4})]
            ),
            "8 and 5",
        ]
    )
    loop = ToolLoop(model, {"double": double_tool(), "add_one": async_tool()})

    result = await loop.run("compute")

    assert result.text == "8 and 5"
    assert [len(s.tool_calls) for s in result.steps] == [2, 0]
    assert [(r.tool_name, r.input, r.output) for r in result.steps[0].tool_results] == [
        ("double", {"x": 4}, {"value": 8}),
        ("add_one", {"x": 4}, 5),
    ]
    second_prompt = model.calls[1].messages
    assert second_prompt[0] == {"role": "user", "content": "compute"}
    assert second_prompt[1]["tool_calls"][0]["function"]["name"] == "double"
    assert tool_messages(second_prompt) == {"a": '{"value": 8}', "b": "5"}
    assert result.messages == [*second_prompt[1:], {"role": "assistant", "content": "8 and 5"}]
    assert [c.name for c in result.tool_calls] == ["double", "add_one"]
    assert result.finish_reason == "stop"


async def test_tool_errors_become_error_results_not_crashes() -> None:
    model = ScriptedChatModel(
        [
            ScriptedReply(
                tool_calls=[
                    call("1", "explode", {"x": 1}),
                    call("2", "nope", {}),
                    call("3", "double", "{not json"),
                    call("4", "double", "[1, 2]"),
                ]
            ),
            "sorry",
        ]
    )
    result = await ToolLoop(model, [failing_tool(), double_tool()]).run("go")

    outputs = [(r.is_error, r.output["error"]) for r in result.steps[0].tool_results]
    assert outputs[0] == (True, "disk on fire")
    assert outputs[1] == (True, "unknown tool 'nope'")
    assert outputs[2][0] and outputs[2][1].startswith("invalid JSON arguments")
    assert outputs[3] == (True, "tool arguments must be a JSON object")
    assert json.loads(tool_messages(model.calls[1].messages)["1"]) == {"error": "disk on fire"}
    assert result.text == "sorry"


@pytest.mark.parametrize(
    ("choice", "sent"),
    [
        ("auto", "auto"),
        ("required", "required"),
        ("double", named_tool("double")),
        ({"type": "tool", "tool_name": "double"}, named_tool("double")),
        (named_tool("double"), named_tool("double")),
    ],
)
async def test_tool_choice_modes_reach_the_model(choice: Any, sent: Any) -> None:
    model = ScriptedChatModel(["done"])
    result = await ToolLoop(model, [double_tool()], tool_choice=choice).run("hi")
    assert model.calls[0].tool_choice == sent
    assert model.calls[0].tools == [double_tool().definition()]
    assert result.steps[0].tool_choice == sent


async def test_without_tools_the_model_gets_neither_tools_nor_tool_choice() -> None:
    model = ScriptedChatModel(["plain"])
    result = await ToolLoop(model, tool_choice="required").run("hi", temperature=0)
    assert (model.calls[0].tools, model.calls[0].tool_choice) == (None, None)
    assert model.calls[0].options == {"temperature": 0}
    assert result.text == "plain"


async def test_max_steps_ends_a_model_that_never_stops_calling_tools() -> None:
    model = ScriptedChatModel(lambda _: ScriptedReply(tool_calls=[call("c", "double", {"x": 1})]))
    result = await ToolLoop(model, [double_tool()], max_steps=3).run("loop forever")
    assert len(model.calls) == 3
    assert [s.step_number for s in result.steps] == [0, 1, 2]
    assert result.text == ""
    assert result.finish_reason == "tool_calls"
    with pytest.raises(ValueError):
        ToolLoop(model, max_steps=0)


async def test_prepare_step_overrides_and_on_finish_see_every_step() -> None:
    seen: list[tuple[int, list[int]]] = []
    finished: list[LoopResult] = []

    async def prepare(step_number: int, steps: list[StepResult]) -> StepOverrides | None:
        seen.append((step_number, [s.step_number for s in steps]))
        if step_number == 0:
            return {"tool_choice": "add_one", "active_tools": ["add_one"]}
        return None

    model = ScriptedChatModel([ScriptedReply(tool_calls=[call("a", "add_one", {"x": 1})]), "2"])
    loop = ToolLoop(
        model,
        [double_tool(), async_tool()],
        prepare_step=prepare,
        on_finish=finished.append,
    )
    result = await loop.run(
        [{"role": "system", "content": "be brief"}, {"role": "user", "content": "+1"}]
    )

    assert seen == [(0, []), (1, [0])]
    assert model.calls[0].tool_choice == named_tool("add_one")
    assert [t["function"]["name"] for t in model.calls[0].tools or []] == ["add_one"]
    assert model.calls[1].tool_choice == "auto"
    assert [t["function"]["name"] for t in model.calls[1].tools or []] == ["double", "add_one"]
    assert finished == [result]


async def test_stream_yields_text_tool_events_and_runs_tools() -> None:
    finished: list[LoopResult] = []
    model = ScriptedChatModel(
        [
            ScriptedReply(text="let me", tool_calls=[call("a", "double", {"x": 21})]),
            ScriptedReply(text="it is 42", chunks=["it ", "is ", "42"]),
        ]
    )
    loop = ToolLoop(model, [double_tool()], on_finish=finished.append)

    events: list[LoopEvent] = [e async for e in loop.stream("double 21")]

    kinds = [(e.type, e.step_number) for e in events]
    assert kinds == [
        ("text", 0),
        ("text", 0),
        ("tool-call", 0),
        ("tool-result", 0),
        ("step-finish", 0),
        ("text", 1),
        ("text", 1),
        ("text", 1),
        ("step-finish", 1),
        ("finish", 1),
    ]
    assert events[3].tool_result is not None and events[3].tool_result.output == {"value": 42}
    result = events[-1].result
    assert result is not None and result.text == "it is 42"
    assert result.steps[0].text == "let me"
    assert [c.kind for c in model.calls] == ["stream", "stream"]
    assert tool_messages(model.calls[1].messages) == {"a": '{"value": 42}'}
    assert finished == [result]


async def test_a_running_tool_sees_its_own_call_id_and_nothing_leaks_out() -> None:
    seen: dict[str, str | None] = {}

    async def whoami(args: dict[str, Any]) -> str:
        seen[str(args["x"])] = current_tool_call_id()
        return "ok"

    def broken(args: dict[str, Any]) -> None:
        seen["broken"] = current_tool_call_id()
        raise RuntimeError("no")

    tools = [Tool("whoami", "Reports.", OBJECT, whoami), Tool("broken", "Fails.", OBJECT, broken)]
    model = ScriptedChatModel(
        [
            ScriptedReply(
                tool_calls=[
                    call("call_a", "whoami", {"x": 1}),
                    call("call_b", "whoami", {"x": 2}),
                    call("call_c", "broken", {"x": 3}),
                ]
            ),
            "done",
        ]
    )
    await ToolLoop(model, tools).run("go")

    assert seen == {"1": "call_a", "2": "call_b", "broken": "call_c"}
    assert current_tool_call_id() is None
    assert await tools[0].run({"x": 9}) == "ok"
    assert seen["9"] is None  # called directly, not by a loop
