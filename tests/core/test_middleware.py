"""Provider-behavior §2, §3.9–3.10 and §4: middleware mode around a scripted model."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from backends.sqlite import SQLiteBackend
from nams_local.integrations import (
    ChatMessage,
    ScriptedChatModel,
    ScriptedReply,
    SyncChatModel,
    ToolCallRequest,
    create_nams,
)
from nams_local.memory_block import HEADER
from nams_local.scope import Scope
from tests.recording_logger import RecordingLogger

from .wrappers import Wrapper

WEATHER_CALL = ToolCallRequest(id="call_1", name="get_weather", arguments='{"city": "Delhi"}')
TIME_CALL = ToolCallRequest(id="call_2", name="get_time", arguments="{}")


async def _stored(backend: Any, user: str = "alex") -> list[tuple[str, str]]:
    conversations = await backend.list_conversations(user_id=user)
    out: list[tuple[str, str]] = []
    for conv in reversed(conversations):
        out += [(m.role, m.content) for m in reversed(await backend.list_messages(conv.id))]
    return out


async def _tool_loop(model: Any, question: str) -> list[ChatMessage]:
    """Drive a three-step tool loop the way an app would: call, run tools, call again."""
    messages: list[ChatMessage] = [{"role": "user", "content": question}]
    for _ in range(3):
        response = await model.generate(messages, tools=[{"type": "function"}])
        messages.append(response.as_message())
        for call in response.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": "sunny"})
        if not response.tool_calls:
            break
    return messages


async def test_user_once_per_turn_and_assistant_only_from_final_step(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    scripted = ScriptedChatModel(
        [
            ScriptedReply(text="let me check", tool_calls=[WEATHER_CALL]),
            ScriptedReply(tool_calls=[TIME_CALL]),
            ScriptedReply(text="It is sunny in Delhi."),
        ]
    )
    model = create_nams(engine, logger=logger).wrap(scripted, {"user_id": "alex"})
    await _tool_loop(model, "What's the weather in Delhi?")
    assert await _stored(engine) == [
        ("user", "What's the weather in Delhi?"),
        ("assistant", "It is sunny in Delhi."),
    ]
    assert logger.records == []


async def test_tool_loop_steps_reuse_the_turns_memories(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    conv = await engine.create_conversation("alex")
    await engine.add_message(conv.id, "user", "Delhi is where my parents live")
    counting = Wrapper(engine)
    scripted = ScriptedChatModel(
        [
            ScriptedReply(tool_calls=[WEATHER_CALL]),
            ScriptedReply(tool_calls=[TIME_CALL]),
            ScriptedReply(text="done"),
        ]
    )
    model = create_nams(counting, logger=logger).wrap(scripted, {"user_id": "alex"})
    await _tool_loop(model, "weather in Delhi?")
    assert counting.calls["search_messages"] == 1
    blocks = [call.last_user_text for call in scripted.calls]
    assert all(b.startswith(HEADER) for b in blocks)
    assert len(set(blocks)) == 1


async def test_stored_user_text_is_clean_never_the_block(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    conv = await engine.create_conversation("alex")
    await engine.add_message(conv.id, "user", "I live in Delhi")
    scripted = ScriptedChatModel(["You live in Delhi."])
    model = create_nams(engine, logger=logger).wrap(scripted, {"user_id": "alex"})
    parts = [{"type": "text", "text": "Where do I live "}, {"type": "text", "text": "in Delhi?"}]
    await model.generate([{"role": "user", "content": parts}])
    assert scripted.calls[0].last_user_text.startswith(HEADER)
    stored = await _stored(engine)
    assert stored[-2:] == [
        ("user", "Where do I live in Delhi?"),
        ("assistant", "You live in Delhi."),
    ]
    assert all(HEADER not in text for _, text in stored)


async def test_caller_messages_are_not_mutated(engine: SQLiteBackend) -> None:
    conv = await engine.create_conversation("alex")
    await engine.add_message(conv.id, "user", "I like green tea")
    scripted = ScriptedChatModel(["ok", "ok"])
    model = create_nams(engine).wrap(scripted, {"user_id": "alex"})
    messages: list[ChatMessage] = [{"role": "user", "content": "green tea?"}]
    await model.generate(messages)
    await model.generate(messages)  # a retry must not stack a second block
    assert messages == [{"role": "user", "content": "green tea?"}]
    assert scripted.calls[1].last_user_text.count(HEADER) == 1


async def test_streaming_persists_only_on_normal_completion(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    scripted = ScriptedChatModel(
        [
            ScriptedReply(text="first answer here", error=RuntimeError("cut"), fail_after=1),
            ScriptedReply(text="second answer here"),
            ScriptedReply(text="third answer here"),
        ]
    )
    model = create_nams(engine, logger=logger).wrap(scripted, {"user_id": "alex"})
    with pytest.raises(RuntimeError, match="cut"):
        async for _ in model.stream([{"role": "user", "content": "q1"}]):
            pass
    assert await _stored(engine) == []
    stream = model.stream([{"role": "user", "content": "q2"}])
    async for _ in stream:
        break  # the caller abandons the stream
    await stream.aclose()  # type: ignore[attr-defined]
    assert await _stored(engine) == []
    chunks = [c async for c in model.stream([{"role": "user", "content": "q3"}])]
    assert "".join(c.text or "" for c in chunks) == "third answer here"
    assert await _stored(engine) == [("user", "q3"), ("assistant", "third answer here")]


async def test_streamed_tool_hand_off_stores_no_assistant_text(engine: SQLiteBackend) -> None:
    scripted = ScriptedChatModel([ScriptedReply(text="checking", tool_calls=[WEATHER_CALL])])
    model = create_nams(engine).wrap(scripted, {"user_id": "alex"})
    chunks = [c async for c in model.stream([{"role": "user", "content": "weather?"}])]
    assert any(c.tool_call for c in chunks)
    assert await _stored(engine) == [("user", "weather?")]


async def test_persist_interactions_off_writes_nothing(engine: SQLiteBackend) -> None:
    scripted = ScriptedChatModel(["hi"])
    model = create_nams(engine, persist_interactions=False).wrap(scripted, {"user_id": "alex"})
    await model.generate([{"role": "user", "content": "hello"}])
    assert await _stored(engine) == []


async def test_ladder_continues_the_latest_conversation(engine: SQLiteBackend) -> None:
    first = await engine.create_conversation("alex")
    latest = await engine.create_conversation("alex")
    model = create_nams(engine).wrap(ScriptedChatModel(["a"]), {"user_id": "alex"})
    await model.generate([{"role": "user", "content": "hello"}])
    assert [m.content for m in await engine.list_messages(latest.id)] == ["a", "hello"]
    assert await engine.list_messages(first.id) == []
    explicit = create_nams(engine).wrap(
        ScriptedChatModel(["b"]), Scope(user_id="alex", conversation_id=first.id)
    )
    await explicit.generate([{"role": "user", "content": "to the first"}])
    assert [m.content for m in await engine.list_messages(first.id)] == ["b", "to the first"]


class FailsToCreateOnce(Wrapper):
    failures = 1

    async def create_conversation(self, *args: Any, **kwargs: Any) -> Any:
        if self.failures:
            self.failures -= 1
            raise ConnectionError("create failed")
        return await self.inner.create_conversation(*args, **kwargs)


async def test_a_failed_resolution_is_retried_next_turn(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    backend = FailsToCreateOnce(engine)
    model = create_nams(backend, logger=logger).wrap(
        ScriptedChatModel(["one", "two"]), {"user_id": "new-user"}
    )
    first = await model.generate([{"role": "user", "content": "turn one"}])
    assert first.text == "one"
    # retrieval could not resolve; persistence, moments later, tried again and succeeded
    assert logger.warnings == ["resolveConversation failed"]
    await model.generate([{"role": "user", "content": "turn two"}])
    assert await _stored(engine, "new-user") == [
        ("user", "turn one"),
        ("assistant", "one"),
        ("user", "turn two"),
        ("assistant", "two"),
    ]
    assert logger.warnings == ["resolveConversation failed"]


async def test_two_sessions_second_prompt_recalls_the_first(logger: RecordingLogger) -> None:
    async with SQLiteBackend(":memory:") as engine:
        nams = create_nams(engine, logger=logger)
        first = await engine.create_conversation("alex")
        session1 = nams.wrap(
            ScriptedChatModel(["Nice, Bangalore is lovely.", "Python is a fine choice."]),
            Scope("alex", first.id),
        )
        await session1.generate([{"role": "user", "content": "I moved to Bangalore in May."}])
        await session1.generate([{"role": "user", "content": "I write Python at work."}])
        second = await engine.create_conversation("alex")
        scripted = ScriptedChatModel(["You live in Bangalore."])
        session2 = nams.wrap(scripted, Scope("alex", second.id))
        answer = await session2.generate([{"role": "user", "content": "Where do I live now?"}])
    assert answer.text == "You live in Bangalore."
    prompt = scripted.calls[0].last_user_text
    assert prompt.startswith(HEADER)
    assert "[cross-session] I moved to Bangalore in May." in prompt
    assert prompt.endswith("\n\nWhere do I live now?")
    assert logger.records == []


def test_sync_facade_for_sync_callers() -> None:
    engine = SQLiteBackend(":memory:", embeddings=False)
    scripted = ScriptedChatModel(["one", ScriptedReply(text="two three")])
    model = SyncChatModel(create_nams(engine).wrap(scripted, {"user_id": "sync-user"}))
    assert model.generate([{"role": "user", "content": "first"}]).text == "one"
    chunks = list(model.stream([{"role": "user", "content": "second"}]))
    assert "".join(c.text or "" for c in chunks) == "two three"

    async def stored() -> list[tuple[str, str]]:
        try:
            return await _stored(engine, "sync-user")
        finally:
            await engine.aclose()

    assert asyncio.run(stored()) == [
        ("user", "first"),
        ("assistant", "one"),
        ("user", "second"),
        ("assistant", "two three"),
    ]


async def test_create_nams_without_a_backend_follows_the_environment(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "configured.db"
    monkeypatch.delenv("MEMORY_API_KEY", raising=False)
    monkeypatch.setenv("NAMS_BACKEND", "local")
    monkeypatch.setenv("NAMS_LOCAL_DB", str(db))
    from nams_local import create_nams as create_configured_nams

    nams = create_configured_nams()  # backend=None: open_backend() reads the environment
    try:
        model = nams.wrap(ScriptedChatModel(["stored"]), {"user_id": "env-user"})
        await model.generate([{"role": "user", "content": "remember me"}])
    finally:
        await nams.aclose()
    async with SQLiteBackend(db, embeddings=False) as reopened:
        assert await _stored(reopened, "env-user") == [
            ("user", "remember me"),
            ("assistant", "stored"),
        ]
