"""Provider-behavior §7.6: the lifecycle hook registry on its own (matchers, chaining, limits)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from nams_local.integrations import HookEntry, HookGroup, HookInput, HookOutput, compile_hooks
from nams_local.integrations.lifecycle import LifecycleHooks
from tests.recording_logger import RecordingLogger


def _input(registry: LifecycleHooks, event: Any, **fields: Any) -> HookInput:
    payload = registry.base_input(event, "alex", None)
    payload.update(fields)  # type: ignore[typeddict-item]
    return payload


def _tool_registry(matcher: str, logger: RecordingLogger, seen: list[str]) -> LifecycleHooks:
    def record(payload: HookInput) -> None:
        seen.append(payload["tool_name"])

    return compile_hooks({"PreToolUse": [HookGroup([record], matcher)]}, logger)


@pytest.mark.parametrize(
    ("matcher", "matched"),
    [
        (None, ["get_weather", "get_time", "store_memory", "getx"]),
        ("*", ["get_weather", "get_time", "store_memory", "getx"]),
        ("", ["get_weather", "get_time", "store_memory", "getx"]),
        ("get_weather|store_memory", ["get_weather", "store_memory"]),
        (" get_time , getx ", ["get_time", "getx"]),  # names are trimmed, matched exactly
        ("get", []),  # plain names never match a prefix
        ("|,", ["get_weather", "get_time", "store_memory", "getx"]),  # empty list = all
        ("^get_", ["get_weather", "get_time"]),  # a regex
        ("memory$", ["store_memory"]),
        ("weather.*", ["get_weather"]),  # unanchored search
    ],
)
async def test_tool_matchers(matcher: str | None, matched: list[str]) -> None:
    logger = RecordingLogger()
    seen: list[str] = []
    registry = _tool_registry(matcher or "", logger, seen) if matcher else None
    if registry is None:
        registry = compile_hooks(
            {"PreToolUse": [lambda p: seen.append(p["tool_name"])]},
            logger,
        )
    for name in ["get_weather", "get_time", "store_memory", "getx"]:
        await registry.run("PreToolUse", _input(registry, "PreToolUse", tool_name=name), name)
    assert seen == matched
    assert logger.records == []


async def test_invalid_regex_logs_once_and_never_matches() -> None:
    logger = RecordingLogger()
    seen: list[str] = []
    registry = _tool_registry("get_(weather", logger, seen)
    await registry.run("PreToolUse", _input(registry, "PreToolUse"), "get_(weather")
    assert seen == []
    assert logger.records == [
        ("error", "invalid PreToolUse hook matcher get_(weather, it will never match", None)
    ]


async def test_matcherless_events_ignore_their_matcher_with_a_warning() -> None:
    logger = RecordingLogger()
    ran: list[str] = []
    registry = compile_hooks(
        {
            "Stop": [{"matcher": "nothing_matches", "hooks": [lambda p: ran.append("stop")]}],
            "UserPromptSubmit": [{"matcher": "*", "hooks": [lambda p: ran.append("prompt")]}],
        },
        logger,
    )
    await registry.run("Stop", _input(registry, "Stop"))
    await registry.run("UserPromptSubmit", _input(registry, "UserPromptSubmit", prompt="x"))
    assert ran == ["stop", "prompt"]
    assert logger.warnings == [
        "Stop has nothing to match on, so its matcher nothing_matches is ignored"
    ]


async def test_session_matchers_match_the_reason() -> None:
    logger = RecordingLogger()
    seen: list[str] = []
    registry = compile_hooks(
        {"SessionStart": [HookGroup([lambda p: seen.append(p["reason"])], "resumed")]}, logger
    )
    for reason in ["created", "resumed"]:
        await registry.run("SessionStart", _input(registry, "SessionStart", reason=reason), reason)
    assert seen == ["resumed"]
    assert logger.records == []


async def test_rewrites_chain_in_registration_order_and_first_block_wins() -> None:
    logger = RecordingLogger()
    seen: list[str] = []

    def exclaim(payload: HookInput) -> HookOutput:
        seen.append(payload["prompt"])
        return {"updated_prompt": payload["prompt"] + "!", "additional_context": "a"}

    def ignore_bad_type(payload: HookInput) -> HookOutput:
        seen.append(payload["prompt"])
        return {"updated_prompt": 42}  # type: ignore[typeddict-item]

    def block(payload: HookInput) -> HookOutput:
        seen.append(payload["prompt"])
        return {"updated_prompt": payload["prompt"] + "?", "decision": "block"}

    def unreachable(payload: HookInput) -> HookOutput:
        seen.append("unreachable")
        return {}

    registry = compile_hooks(
        {"UserPromptSubmit": [exclaim, HookGroup([ignore_bad_type, exclaim]), block, unreachable]},
        logger,
    )
    outcome = await registry.run(
        "UserPromptSubmit", _input(registry, "UserPromptSubmit", prompt="hi")
    )
    assert seen == ["hi", "hi!", "hi!", "hi!!"]
    assert outcome.input["prompt"] == "hi!!?"  # the blocking handler's rewrite still applies
    assert (outcome.blocked, outcome.reason) == (True, "blocked by a UserPromptSubmit hook")
    assert outcome.context == ["a", "a"]


async def test_timeouts_use_the_entry_timeout_and_name() -> None:
    logger = RecordingLogger()
    release = asyncio.Event()

    async def slow(payload: HookInput) -> HookOutput:
        await release.wait()  # never set during the run: the hook timeout ends it
        return {"additional_context": "late"}

    async def quick(payload: HookInput) -> HookOutput:
        return {"additional_context": "on time"}

    registry = compile_hooks(
        {
            "Stop": [
                HookGroup([HookEntry(slow, timeout=0.02)]),
                {"hooks": [{"handler": slow, "timeout": 0.03, "name": "named"}]},
                quick,
            ]
        },
        logger,
    )
    outcome = await registry.run("Stop", _input(registry, "Stop"))
    assert outcome.context == ["on time"]
    assert logger.warnings == [
        "Stop hook slow timed out after 20ms, ignoring it",
        "Stop hook named timed out after 30ms, ignoring it",
    ]


async def test_anonymous_handlers_and_falsy_returns() -> None:
    logger = RecordingLogger()

    def nothing(payload: HookInput) -> None:
        return None

    registry = compile_hooks(
        {
            "PostToolUse": [
                nothing,
                lambda p: 1 / 0,  # type: ignore[list-item,return-value]
                lambda p: {"updated_output": None, "system_message": "note"},
            ]
        },
        logger,
        on_system_message=lambda message, event: logger.warn(f"custom {event}: {message}"),
    )
    outcome = await registry.run("PostToolUse", _input(registry, "PostToolUse", output="x"))
    assert outcome.input["output"] is None  # None is a defined value: it rewrites
    assert outcome.system_messages == ["note"]
    assert [(level, m) for level, m, _ in logger.records] == [
        ("error", "PostToolUse hook anonymous threw, ignoring it"),
        ("warn", "custom PostToolUse: note"),
    ]


async def test_default_system_message_goes_to_the_logger() -> None:
    logger = RecordingLogger()
    registry = compile_hooks({"SessionEnd": [lambda p: {"system_message": "bye"}]}, logger)
    await registry.run("SessionEnd", _input(registry, "SessionEnd", reason="other"), "other")
    assert logger.warnings == ["SessionEnd hook: bye"]


def test_unknown_event_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown hook event 'PostToolCall'"):
        compile_hooks({"PostToolCall": [print]}, RecordingLogger())
