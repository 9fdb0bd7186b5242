"""Memory is never the reason a model call fails (provider-behavior §3.10, §4.2, §8).

Every backend method a turn uses is made to fail, hang or answer garbage, one at a time,
around the real engine: the model's answer always comes back, and the logger receives
exactly one warning per failed call.
"""

from __future__ import annotations

import logging

import pytest

from backends.sqlite import SQLiteBackend
from nams_local.integrations import ScriptedChatModel, ScriptedReply, create_nams
from tests.recording_logger import RecordingLogger

from .wrappers import Faulty

TURN_METHODS = [
    "list_conversations",
    "search_messages",
    "search_entities",
    "list_steps",
    "search_user_messages",
    "get_entity",
    "add_message",
]
FAULTS = ["raise", "timeout", "garbage"]


async def _seed(engine: SQLiteBackend) -> None:
    older = await engine.create_conversation("alex")
    await engine.add_message(older.id, "user", "I drink green tea every morning")
    await engine.record_step(older.id, "green tea is the user's habit", "direct response")
    current = await engine.create_conversation("alex")
    await engine.add_message(current.id, "user", "green tea or coffee?")
    await engine.record_step(current.id, "suggested green tea", "direct response")
    tea = await engine.add_entity("green tea", "Concept", "the user's drink")
    shop = await engine.add_entity("Chai Point", "Organization")
    await engine.add_relationship(tea.id, shop.id, "SOLD_AT")


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("method", TURN_METHODS)
async def test_every_failure_mode_still_returns_the_answer(
    method: str, fault: str, logger: RecordingLogger
) -> None:
    async with SQLiteBackend(":memory:", embeddings=False) as engine:
        await _seed(engine)
        backend = Faulty(engine, {method: fault})
        # A hang needs a timeout short enough for the test; it also bounds the healthy calls
        # of that turn, so it stays well above what a healthy call takes on a loaded 2-core
        # machine (0.5 s once turned a slow healthy search into an extra warning in CI).
        timeout = 2.0 if fault == "timeout" else 30.0
        scripted = ScriptedChatModel(["Green tea, as always."])
        model = create_nams(backend, logger=logger, lookup_timeout=timeout).wrap(
            scripted, {"user_id": "alex"}
        )
        answer = await model.generate([{"role": "user", "content": "green tea again?"}])
        stream_model = create_nams(backend, logger=logger, lookup_timeout=timeout).wrap(
            ScriptedChatModel([ScriptedReply(text="Streaming green tea.")]), {"user_id": "alex"}
        )
        chunks = [c async for c in stream_model.stream([{"role": "user", "content": "tea?"}])]
    assert answer.text == "Green tea, as always."
    assert "".join(c.text or "" for c in chunks) == "Streaming green tea."
    failures = backend.calls[method]
    assert failures >= 1, f"{method} was never called"
    assert len(logger.records) == failures, logger.records
    assert all(level == "warn" for level, _, _ in logger.records)


@pytest.mark.parametrize("fault", FAULTS)
async def test_a_new_user_whose_conversation_cannot_be_created(
    fault: str, logger: RecordingLogger
) -> None:
    async with SQLiteBackend(":memory:", embeddings=False) as engine:
        backend = Faulty(engine, {"create_conversation": fault})
        model = create_nams(
            backend, logger=logger, lookup_timeout=2.0 if fault == "timeout" else 30.0
        ).wrap(ScriptedChatModel(["Hello!"]), {"user_id": "newcomer"})
        answer = await model.generate([{"role": "user", "content": "hi"}])
        assert await engine.list_conversations(user_id="newcomer") == []
    assert answer.text == "Hello!"
    assert logger.warnings == ["resolveConversation failed", "persist failed"]
    assert backend.calls["create_conversation"] == 2


async def test_the_model_s_own_error_is_not_swallowed(logger: RecordingLogger) -> None:
    async with SQLiteBackend(":memory:", embeddings=False) as engine:
        model = create_nams(engine, logger=logger).wrap(
            ScriptedChatModel([ScriptedReply(error=ValueError("model down"))]),
            {"user_id": "alex"},
        )
        with pytest.raises(ValueError, match="model down"):
            await model.generate([{"role": "user", "content": "hi"}])
    assert logger.records == []


async def test_default_logger_is_stdlib_nams_local(caplog: pytest.LogCaptureFixture) -> None:
    async with SQLiteBackend(":memory:", embeddings=False) as engine:
        backend = Faulty(engine, {"search_entities": "raise"})
        model = create_nams(backend).wrap(ScriptedChatModel(["ok"]), {"user_id": "alex"})
        with caplog.at_level(logging.WARNING, logger="nams_local"):
            await model.generate([{"role": "user", "content": "tea?"}])
    records = [r for r in caplog.records if r.name == "nams_local"]
    assert [(r.levelname, r.getMessage()) for r in records] == [
        ("WARNING", "[nams] searchEntities failed: search_entities exploded"),
        ("WARNING", '[nams] searchEntities fallback ("tea") failed: search_entities exploded'),
        ("WARNING", '[nams] searchEntities fallback ("Tea") failed: search_entities exploded'),
    ]
