"""``NamsSession`` and the memory helpers in a real Agents SDK ``Runner`` loop with the SDK's
own ``ScriptedModel``: items survive losslessly (and a reopen), the memory block is
recalled once per run and reaches the next session's model, each run is stored once, and
a failing backend costs a warning, never the run."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest
from agents import Agent, RunConfig, Runner, TResponseInputItem
from agents.testing import ScriptedModel, assistant_message, function_call

from backends.sqlite import SQLiteBackend
from nams_local.integrations.openai_agents import METADATA_LOST, NamsSession
from nams_local.models import Message
from tests.core.wrappers import Faulty, Wrapper
from tests.recording_logger import RecordingLogger

from .runs import FACT, QUESTION, sessions

ITEMS: list[dict[str, Any]] = [
    {"role": "user", "content": "What's the weather in Paris?"},
    {
        "role": "user",
        "content": [{"type": "input_text", "text": "and in Rome?"}],
    },
    {
        "type": "function_call",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": '{"city":"Paris"}',
        "id": "fc_1",
        "status": "completed",
    },
    {"type": "function_call_output", "call_id": "call_1", "output": "sunny, 21 C"},
    {"type": "reasoning", "id": "rs_1", "summary": []},
    {
        "type": "message",
        "role": "assistant",
        "id": "msg_1",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Sunny in Paris.", "annotations": []}],
    },
]


def _items() -> list[TResponseInputItem]:
    return cast(list[TResponseInputItem], [dict(i) for i in ITEMS])


async def test_items_round_trip_losslessly_and_survive_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "agents.db"
    async with SQLiteBackend(path, embeddings=False, extraction="off") as backend:
        session = NamsSession("s-1", backend, user_id="alice")
        await session.add_items(_items())
        assert await session.get_items() == ITEMS
        assert await session.get_items(limit=2) == ITEMS[-2:]
        assert await NamsSession("other", backend, user_id="alice").get_items() == []
    async with SQLiteBackend(path, embeddings=False, extraction="off") as backend:
        session = NamsSession("s-1", backend, user_id="alice")
        assert await session.get_items() == ITEMS
        assert await session.pop_item() == ITEMS[-1]
        assert await session.get_items() == ITEMS[:-1]
        again = NamsSession("s-1", backend, user_id="alice")  # finds the rewritten one
        assert await again.get_items() == ITEMS[:-1]
        await again.clear_session()
        assert await again.get_items() == []
        assert await again.pop_item() is None


class DropsMetadata(Wrapper):
    """A backend that keeps no message metadata (what hosted NAMS does)."""

    @staticmethod
    def _bare(messages: list[Message]) -> list[Message]:
        return [m.model_copy(update={"metadata": {}}) for m in messages]

    async def add_messages(self, conversation_id: str, messages: Any) -> list[Message]:
        return self._bare(await self.inner.add_messages(conversation_id, messages))

    async def list_messages(self, conversation_id: str, limit: int = 50) -> list[Message]:
        return self._bare(await self.inner.list_messages(conversation_id, limit))


async def test_without_message_metadata_it_says_once_what_is_lost(
    logger: RecordingLogger,
) -> None:
    async with sessions() as s:
        session = NamsSession("s", DropsMetadata(s.backend), user_id=s.user_id, logger=logger)
        await session.add_items(_items())
        items = await session.get_items()
        await session.get_items()
        assert logger.warnings == [METADATA_LOST]
        assert items[0] == {"role": "user", "content": "What's the weather in Paris?"}
        assert items[2] == {
            "role": "assistant",
            "content": '[function_call] get_weather: {"city":"Paris"}',
        }


def _config() -> RunConfig:
    return RunConfig(tracing_disabled=True)


async def _tool_then_answer(
    session: NamsSession, prompt: str, answer: str
) -> tuple[ScriptedModel, Any]:
    """One run on ``session``: the model calls ``query_memory``, then answers."""
    model = ScriptedModel(
        [
            [function_call("query_memory", {"query": "tea"}, call_id="c1")],
            [assistant_message(answer)],
        ]
    )
    agent = Agent(
        name="helper",
        model=model,
        instructions=session.instructions("Be brief."),
        tools=session.tools(),
    )
    return model, await Runner.run(agent, prompt, session=session, run_config=_config())


async def test_two_sessions_memory_reaches_the_second_run_once_per_run() -> None:
    async with sessions() as s:
        counted = Wrapper(s.backend)
        first = NamsSession("monday", counted, user_id=s.user_id)
        model, result = await _tool_then_answer(first, FACT, "Noted: oolong.")
        assert result.final_output == "Noted: oolong."
        stored = await first.get_items()
        assert [i.get("type", "message") for i in stored] == [
            "message",
            "function_call",
            "function_call_output",
            "message",
        ]  # the run's items, stored once
        assert stored[0] == {"role": "user", "content": FACT}

        counted.calls.clear()
        second = NamsSession("tuesday", counted, user_id=s.user_id)
        model, _ = await _tool_then_answer(second, QUESTION, "You like oolong.")
        assert len(model.calls) == 2
        for call in model.calls:  # every model call of the run carries the block
            assert call.system_instructions is not None
            assert call.system_instructions.startswith("Be brief.")
            assert "oolong from Taiwan" in call.system_instructions
            assert QUESTION not in call.system_instructions  # stored already, not recalled
        assert counted.calls["search_user_messages"] == 2  # one recall + the tool's query
        assert "oolong from Taiwan" in str(model.calls[1].input[-1])


async def test_a_failing_backend_never_fails_the_run(logger: RecordingLogger) -> None:
    async with sessions() as s:
        backend = Faulty(s.backend, {"search_user_messages": "raise"})
        session = NamsSession("s", backend, user_id=s.user_id, logger=logger)
        model = ScriptedModel([[assistant_message("Still here.")]])
        agent = Agent(name="helper", model=model, instructions=session.instructions())
        result = await Runner.run(agent, QUESTION, session=session, run_config=_config())
        assert result.final_output == "Still here."
        assert backend.calls["search_user_messages"] == 1
        assert [level for level, _, _ in logger.records] == ["warn"]
        assert len(await session.get_items()) == 2


async def test_pop_item_refuses_to_truncate_a_long_session() -> None:
    from nams_local.errors import NotSupportedError

    async with sessions() as s:
        session = NamsSession("long", s.backend, user_id=s.user_id)
        many = [{"role": "user", "content": f"note {n}"} for n in range(201)]
        await session.add_items(cast(list[TResponseInputItem], many))
        assert len(await session.get_items()) == 200  # the backend's window
        with pytest.raises(NotSupportedError):
            await session.pop_item()
        assert (await session.get_items())[-1] == many[-1]  # nothing was rewritten
