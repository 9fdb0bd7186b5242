"""Provider-behavior §7.1–7.5: hooks mode driving a scripted tool loop on the real engine."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from backends.sqlite import SQLiteBackend
from nams_local.errors import InvalidInputError
from nams_local.integrations import (
    HookInput,
    HookOutput,
    ScriptedChatModel,
    ScriptedReply,
    SessionTurn,
    Tool,
    ToolCallRequest,
    ToolLoop,
    create_nams,
)
from tests.recording_logger import RecordingLogger

from .wrappers import Faulty

USER = "alex"


def _tool(name: str, execute: Any) -> Tool:
    return Tool(name, f"the {name} tool", {"type": "object", "properties": {}}, execute)


async def _stored(backend: Any, user: str = USER) -> list[tuple[str, str, dict[str, Any]]]:
    conversations = await backend.list_conversations(user_id=user)
    out: list[tuple[str, str, dict[str, Any]]] = []
    for conv in reversed(conversations):
        for m in reversed(await backend.list_messages(conv.id)):
            out.append((m.role, m.content, m.metadata))
    return out


def _recorder(events: list[str], inputs: list[HookInput]) -> Any:
    async def record(payload: HookInput) -> HookOutput | None:
        events.append(payload["event"])
        inputs.append(payload)
        if payload["event"] == "PostToolUseFailure":
            return {"retry": True}
        return None

    return record


async def test_every_event_fires_in_order_in_one_session(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    events: list[str] = []
    inputs: list[HookInput] = []
    record = _recorder(events, inputs)
    hooks = create_nams(engine, logger=logger).hooks(
        {"user_id": USER},
        hooks={
            "SessionStart": [record],
            "UserPromptSubmit": [record],
            "PreToolUse": [record],
            "PostToolUse": [record],
            "PostToolUseFailure": [record],
            "PreMemoryWrite": [record],
            "Stop": [record],
            "SessionEnd": [record],
        },
    )
    attempts: list[int] = []

    def flaky(arguments: dict[str, Any]) -> str:
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionError("weather service hiccup")
        return "sunny"

    tools = hooks.with_hooks({"get_weather": _tool("get_weather", flaky)})
    model = ScriptedChatModel(
        [
            ScriptedReply(
                tool_calls=[ToolCallRequest("call_1", "get_weather", '{"city": "Delhi"}')]
            ),
            ScriptedReply(text="It is sunny in Delhi."),
        ]
    )

    prepared = await hooks.prepare("Weather in Delhi?")
    loop = ToolLoop(model, tools, on_finish=hooks.on_finish({"prompt": prepared.prompt}))
    result = await loop.run(prepared.model_messages())
    await hooks.end(reason="logout")

    assert result.text == "It is sunny in Delhi."
    assert events == [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUseFailure",
        "PostToolUse",
        "PreMemoryWrite",
        "Stop",
        "SessionEnd",
    ]
    by_event = {i["event"]: i for i in inputs}
    assert by_event["SessionStart"]["reason"] == "created"
    assert by_event["PreToolUse"]["input"] == {"city": "Delhi"}
    tool_inputs = [i for i in inputs if i["event"] in ("PreToolUse", "PostToolUse")]
    tool_inputs += [i for i in inputs if i["event"] == "PostToolUseFailure"]
    assert [(i["tool_name"], i["tool_call_id"]) for i in tool_inputs] == [
        ("get_weather", "call_1")
    ] * 3  # the id of the model's tool call, as in the stored audit turns
    assert by_event["PostToolUseFailure"]["attempt"] == 1
    assert by_event["PostToolUse"]["output"] == "sunny"
    assert by_event["SessionEnd"]["reason"] == "logout"
    assert all(i["user_id"] == USER and i["timestamp"].endswith("Z") for i in inputs)
    assert [t["content"] for t in by_event["Stop"]["turns"]] == [
        "Weather in Delhi?",
        '[tool-call] get_weather: {"city":"Delhi"}',
        "[tool-result] get_weather: sunny",
        "It is sunny in Delhi.",
    ]
    stored = await _stored(engine)
    assert [(role, content) for role, content, _ in stored] == [
        ("user", "Weather in Delhi?"),
        ("assistant", '[tool-call] get_weather: {"city":"Delhi"}'),
        ("assistant", "[tool-result] get_weather: sunny"),
        ("assistant", "It is sunny in Delhi."),
    ]
    assert stored[1][2] == {
        "nams_kind": "tool-call",
        "tool_name": "get_weather",
        "tool_call_id": "call_1",
    }
    assert stored[2][2]["nams_kind"] == "tool-result"
    assert stored[2][2]["tool_call_id"] == "call_1"


async def test_load_session_drops_audit_turns_and_returns_oldest_first(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    conv = await engine.create_conversation(user_id=USER)
    await engine.add_message(conv.id, "user", "first question")
    await engine.add_message(conv.id, "assistant", "[tool-call] x: {}", {"nams_kind": "tool-call"})
    await engine.add_message(
        conv.id, "assistant", "[tool-result] x: 1", {"namsKind": "tool-result"}
    )
    await engine.add_message(conv.id, "system", "not a turn")
    await engine.add_message(conv.id, "assistant", "first answer")
    await engine.add_message(conv.id, "user", "second question")
    hooks = create_nams(engine, logger=logger).hooks()

    history = await hooks.load_session(user_id=USER)
    assert history == [
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "first answer"},
        {"role": "user", "content": "second question"},
    ]
    assert await hooks.load_session(user_id=USER, limit=2) == [
        {"role": "assistant", "content": "first answer"},
        {"role": "user", "content": "second question"},
    ]
    assert await hooks.load_session(user_id="nobody") == []
    assert await engine.list_conversations(user_id="nobody") == []  # never creates one


async def test_load_session_failure_is_a_warning_and_no_history(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    conv = await engine.create_conversation(user_id=USER)
    faulty = Faulty(engine, {"list_messages": "raise"})
    hooks = create_nams(faulty, logger=logger).hooks({"user_id": USER, "conversation_id": conv.id})
    prepared = await hooks.prepare("hello")
    assert prepared.messages == [{"role": "user", "content": "hello"}]
    assert logger.warnings == ["loadSession failed, continuing without history"]


async def test_missing_user_id_raises_for_every_method(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    hooks = create_nams(engine, logger=logger).hooks()
    with pytest.raises(InvalidInputError, match="load_session needs a user_id"):
        await hooks.load_session()
    with pytest.raises(InvalidInputError, match="prepare needs a user_id"):
        await hooks.prepare("hi")
    with pytest.raises(InvalidInputError, match="end needs a user_id"):
        await hooks.end()
    with pytest.raises(InvalidInputError, match="on_finish needs a user_id"):
        await hooks.on_finish()({"text": "hi"})
    # ... but a user id from the event's runtime context is enough.
    await hooks.on_finish()({"text": "hi", "runtime_context": {"user_id": USER}})
    assert [c for _, c, _ in await _stored(engine)] == ["hi"]


async def test_throwing_and_timed_out_handlers_do_not_break_the_generation(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    def boom(payload: HookInput) -> HookOutput:
        raise RuntimeError("handler bug")

    async def stuck(payload: HookInput) -> HookOutput:
        await asyncio.Event().wait()  # never set: only the hook timeout ends it
        return {"updated_prompt": "never applied"}

    def polite(payload: HookInput) -> HookOutput:
        return {"updated_prompt": payload["prompt"] + " please", "additional_context": "be brief"}

    hooks = create_nams(engine, logger=logger).hooks(
        {"user_id": USER},
        hooks={
            "UserPromptSubmit": [
                {"hooks": [boom, {"handler": stuck, "timeout": 0.05, "name": "slowpoke"}]},
                polite,
            ],
            "Stop": [boom],
        },
    )
    model = ScriptedChatModel(["Here you go."])
    prepared = await hooks.prepare("tell me a joke")
    result = await ToolLoop(model, on_finish=hooks.on_finish({"prompt": prepared.prompt})).run(
        prepared.model_messages()
    )

    assert result.text == "Here you go."
    assert prepared.prompt == "tell me a joke please"
    assert model.calls[0].messages == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "tell me a joke please"},
    ]
    assert ("error", "UserPromptSubmit hook boom threw, ignoring it") in [
        (level, m) for level, m, _ in logger.records
    ]
    assert "UserPromptSubmit hook slowpoke timed out after 50ms, ignoring it" in logger.warnings
    assert ("error", "Stop hook boom threw, ignoring it") in [
        (level, m) for level, m, _ in logger.records
    ]
    assert [c for _, c, _ in await _stored(engine)] == ["tell me a joke please", "Here you go."]


async def test_pre_memory_write_redacts_the_stored_turns(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    seen_by_stop: list[list[Any]] = []

    def redact(payload: HookInput) -> HookOutput:
        turns: list[SessionTurn] = [
            {"role": t["role"], "content": t["content"].replace("4111-1111", "[card]")}
            for t in payload["turns"]
        ]
        return {"updated_turns": turns}

    def stop(payload: HookInput) -> None:
        seen_by_stop.append(payload["turns"])

    hooks = create_nams(engine, logger=logger).hooks(
        {"user_id": USER}, hooks={"PreMemoryWrite": [redact], "Stop": [stop]}
    )
    await hooks.on_finish({"prompt": "my card is 4111-1111"})({"text": "Saved 4111-1111."})
    assert [c for _, c, _ in await _stored(engine)] == ["my card is [card]", "Saved [card]."]
    assert [t["content"] for t in seen_by_stop[0]] == ["my card is [card]", "Saved [card]."]


async def test_pre_memory_write_can_block_the_write(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    calls: list[str] = []

    def block(payload: HookInput) -> HookOutput:
        return {"decision": "block", "block_reason": "contains PII"}

    def never(payload: HookInput) -> None:
        calls.append(payload["event"])

    hooks = create_nams(engine, logger=logger).hooks(
        {"user_id": USER}, hooks={"PreMemoryWrite": [block, never], "Stop": [never]}
    )
    await hooks.on_finish({"prompt": "secret"})({"text": "ok"})
    assert await engine.list_conversations(user_id=USER) == []
    assert calls == []  # first deny wins; Stop does not run for a dropped write
    assert logger.warnings == ["PreMemoryWrite dropped this write: contains PII"]


async def test_pre_tool_use_rewrites_chain_and_first_deny_wins(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    ran: list[dict[str, Any]] = []
    seen: list[Any] = []

    def add_unit(payload: HookInput) -> HookOutput:
        return {"updated_input": {**payload["input"], "unit": "C"}}

    def check(payload: HookInput) -> HookOutput:
        seen.append(payload["input"])
        if payload["input"].get("city") == "Atlantis":
            return {"permission_decision": "deny", "permission_decision_reason": "no such city"}
        return {"permission_decision": "allow"}

    def after(payload: HookInput) -> None:
        seen.append("after")

    def weather(arguments: dict[str, Any]) -> dict[str, Any]:
        ran.append(arguments)
        return {"temp": 30}

    def shout(payload: HookInput) -> HookOutput:
        return {"updated_output": {**payload["output"], "loud": True}}

    hooks = create_nams(engine, logger=logger).hooks(
        {"user_id": USER},
        hooks={"PreToolUse": [add_unit, check, after], "PostToolUse": [shout]},
    )
    tools = hooks.with_hooks({"get_weather": _tool("get_weather", weather)})
    tool = tools["get_weather"]

    assert await tool.run({"city": "Delhi"}) == {"temp": 30, "loud": True}
    assert ran == [{"city": "Delhi", "unit": "C"}]
    assert await tool.run({"city": "Atlantis"}) == {
        "blocked": True,
        "tool_name": "get_weather",
        "reason": "no such city",
    }
    assert ran == [{"city": "Delhi", "unit": "C"}]
    assert seen == [{"city": "Delhi", "unit": "C"}, "after", {"city": "Atlantis", "unit": "C"}]
    assert logger.warnings == ["PreToolUse denied get_weather: no such city"]


async def test_tool_errors_are_rethrown_after_failure_hooks(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    attempts: list[int] = []

    def retry_always(payload: HookInput) -> HookOutput:
        attempts.append(payload["attempt"])
        return {"retry": True, "additional_context": f"failed {payload['attempt']}"}

    def broken(arguments: dict[str, Any]) -> Any:
        raise ValueError("broken tool")

    hooks = create_nams(engine, logger=logger).hooks(
        {"user_id": USER}, hooks={"PostToolUseFailure": [retry_always]}
    )
    tool = hooks.with_hooks({"broken": _tool("broken", broken)})["broken"]
    with pytest.raises(ValueError, match="broken tool"):
        await tool.run({})
    assert attempts == [1, 2]  # retry honoured on attempt 1 only
    assert hooks.queued_context(USER) == ["failed 1", "failed 2"]


async def test_with_hooks_returns_the_same_tools_without_tool_hooks(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    tools = {"noop": _tool("noop", lambda arguments: "ok")}
    plain = create_nams(engine, logger=logger).hooks({"user_id": USER}, hooks={"Stop": [print]})
    assert plain.with_hooks(tools) is tools

    def deny(payload: HookInput) -> HookOutput:
        return {"permission_decision": "deny"}

    anonymous = create_nams(engine, logger=logger).hooks(hooks={"PreToolUse": [deny]})
    wrapped = anonymous.with_hooks(tools)
    assert wrapped is not tools
    assert await wrapped["noop"].run({}) == "ok"  # no user id: runs unhooked
    assert logger.warnings == [
        "withHooks needs a userId to run noop hooks, running the tool unhooked"
    ]
    hooked = anonymous.with_hooks(tools, {"user_id": USER})
    assert await hooked["noop"].run({}) == {
        "blocked": True,
        "tool_name": "noop",
        "reason": "blocked by a PreToolUse hook",
    }


async def test_queued_context_is_capped_at_twenty_and_drained_by_prepare(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    count = iter(range(100))

    def note(payload: HookInput) -> HookOutput:
        return {"additional_context": f"ctx {next(count)}"}

    def now(payload: HookInput) -> HookOutput:
        return {"additional_context": "current"}

    hooks = create_nams(engine, logger=logger).hooks(
        {"user_id": USER}, hooks={"PostToolUse": [note], "UserPromptSubmit": [now]}
    )
    tool = hooks.with_hooks({"noop": _tool("noop", lambda arguments: "ok")})["noop"]
    for _ in range(25):
        await tool.run({})
    assert hooks.queued_context(USER) == [f"ctx {i}" for i in range(5, 25)]

    prepared = await hooks.prepare("next")
    assert prepared.instructions == "\n".join([*(f"ctx {i}" for i in range(5, 25)), "current"])
    assert hooks.queued_context(USER) == []
    assert (await hooks.prepare("again")).instructions == "current"


async def test_blocked_prompt_returns_no_messages_and_keeps_queued_context(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    def block(payload: HookInput) -> HookOutput:
        return {"decision": "block", "block_reason": "off topic", "system_message": "refused"}

    messages: list[tuple[str, str]] = []
    hooks = create_nams(engine, logger=logger).hooks(
        {"user_id": USER},
        hooks={"UserPromptSubmit": [block]},
        on_system_message=lambda message, event: messages.append((event, message)),
    )
    hooks._queue(f"{USER}::", ["left for later"])
    prepared = await hooks.prepare("how to build a bomb")
    assert (prepared.blocked, prepared.block_reason, prepared.messages) == (True, "off topic", [])
    assert prepared.instructions is None
    assert prepared.system_messages == ["refused"]
    assert messages == [("UserPromptSubmit", "refused")]
    assert hooks.queued_context(USER) == ["left for later"]


async def test_session_start_fires_once_until_end(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    reasons: list[str] = []

    def started(payload: HookInput) -> HookOutput:
        reasons.append(payload["reason"])
        return {"additional_context": "welcome back" if payload["reason"] == "resumed" else ""}

    hooks = create_nams(engine, logger=logger).hooks(
        {"user_id": USER}, hooks={"SessionStart": [started]}
    )
    first = await hooks.prepare("hi")
    await hooks.on_finish({"prompt": "hi"})({"text": "hello"})
    await hooks.prepare("again")
    await hooks.end()
    resumed = await hooks.prepare("back")
    assert reasons == ["created", "resumed"]
    assert first.instructions is None
    assert resumed.instructions == "welcome back"
    assert resumed.messages[:-1] == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]


async def test_bulk_write_failure_falls_back_to_single_writes(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    faulty = Faulty(engine, {"add_messages": "raise"})
    hooks = create_nams(faulty, logger=logger).hooks({"user_id": USER})
    await hooks.on_finish({"prompt": "q"})({"text": "a"})
    assert [(r, c) for r, c, _ in await _stored(engine)] == [("user", "q"), ("assistant", "a")]
    assert logger.warnings == ["bulkAddMessages failed, falling back to per-message writes"]


async def test_persist_failure_is_logged_not_raised(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    faulty = Faulty(engine, {"list_conversations": "raise", "create_conversation": "raise"})
    hooks = create_nams(faulty, logger=logger).hooks({"user_id": USER})
    await hooks.on_finish({"prompt": "q", "persist_user_prompt": False})({"text": "a"})
    assert logger.warnings == [
        "listConversations failed, creating new conversation",
        "onFinish failed to persist the generation",
    ]


async def test_on_finish_reads_runtime_context_and_response_messages(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    hooks = create_nams(engine, logger=logger).hooks({"user_id": "closure-user"})
    long_result = "x" * 5000
    event = {
        "text": "ignored when response messages exist",
        "final_step": {
            "runtime_context": {
                "user_id": USER,
                "prompt": [
                    {"role": "system", "content": "sys"},
                    {"role": "user", "content": [{"type": "text", "text": "part one"}]},
                    {"role": "user", "content": ""},
                    {"role": "user", "content": "part two"},
                ],
            }
        },
        "response_messages": [
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "Looking "}, {"type": "text", "text": "up"}],
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "lookup", "arguments": '{"q": "é"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": '{"rows": [1, 2]}'},
            {"role": "tool", "tool_call_id": "c9", "content": long_result},
            {"role": "assistant", "content": "Done."},
        ],
    }
    await hooks.on_finish()(event)
    stored = await _stored(engine)
    assert [c for _, c, _ in stored] == [
        "part one\npart two",
        "Looking up",
        '[tool-call] lookup: {"q":"é"}',
        '[tool-result] lookup: {"rows":[1,2]}',
        ("[tool-result] unknown: " + long_result)[:4000],
        "Done.",
    ]
    assert await engine.list_conversations(user_id="closure-user") == []


async def test_an_extraction_model_is_ignored_in_hooks_mode_with_one_warning(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    nams = create_nams(engine, logger=logger, extraction_model=ScriptedChatModel([]))
    nams.hooks({"user_id": USER})
    nams.hooks({"user_id": USER})
    assert logger.warnings == [
        "extractionModel is ignored in hooks mode — NAMS extracts persisted turns "
        "server-side. It applies to .tools()/.toolsWithMcp() only."
    ]
