"""``NamsMemory`` on a real pydantic-ai ``Agent`` with pydantic-ai's own offline models
(``FunctionModel``, ``TestModel``): one recall per run however many requests it makes,
memory reaches the next session's model, each run is stored once, tools work, and a
failing backend costs a warning, never the run."""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from nams_local.integrations.pydantic_ai import NamsMemory
from tests.core.wrappers import Faulty, Wrapper
from tests.recording_logger import RecordingLogger

from .runs import FACT, QUESTION, sessions, stored


class Recorder:
    """A ``FunctionModel`` body: calls ``query_memory`` first when asked to, then answers;
    keeps the instructions and messages of every request."""

    def __init__(self, answer: str, *, use_tool: bool = False) -> None:
        self.answer = answer
        self.use_tool = use_tool
        self.instructions: list[str | None] = []
        self.requests: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.instructions.append(info.instructions)
        self.requests.append(list(messages))
        if self.use_tool and len(self.requests) == 1:
            return ModelResponse(parts=[ToolCallPart("query_memory", {"query": "oolong tea"})])
        return ModelResponse(parts=[TextPart(self.answer)])


async def test_memory_is_recalled_once_per_run_and_reaches_the_next_session() -> None:
    async with sessions() as s:
        counted = Wrapper(s.backend)
        first = Recorder("Noted.", use_tool=True)
        agent = Agent(
            FunctionModel(first),
            instructions="Be brief.",
            capabilities=[NamsMemory(counted, user_id=s.user_id, conversation_id=s.first)],
        )
        result = await agent.run(FACT)
        assert result.output == "Noted."
        assert len(first.requests) == 2  # the tool call, then the answer
        assert counted.calls["search_user_messages"] == 2  # the run's recall + the tool's
        assert await stored(s.backend, s.first) == [("user", FACT), ("assistant", "Noted.")]

        second = Recorder("Oolong.", use_tool=True)
        counted.calls.clear()
        agent = Agent(
            FunctionModel(second),
            instructions="Be brief.",
            capabilities=[NamsMemory(counted, user_id=s.user_id, conversation_id=s.second)],
        )
        await agent.run(QUESTION)
        assert counted.calls["search_user_messages"] == 2  # once per run, once for the tool
        for instructions in second.instructions:  # every request of the run carries it
            assert instructions is not None
            assert instructions.startswith("Be brief.")
            assert "oolong from Taiwan" in instructions
        tool_return = second.requests[1][-1].parts[0]
        assert "oolong from Taiwan" in str(getattr(tool_return, "content", ""))
        assert await stored(s.backend, s.second) == [("user", QUESTION), ("assistant", "Oolong.")]


async def test_test_model_runs_the_memory_tools() -> None:
    async with sessions() as s:
        await s.backend.add_message(s.first, "user", FACT)
        model = TestModel(call_tools=["store_memory"], custom_output_text="done")
        memory = NamsMemory(s.backend, user_id=s.user_id, conversation_id=s.second)
        result = await Agent(model, capabilities=[memory]).run("remember this")
        assert result.output == "done"
        entities = await s.backend.list_entities()
        assert len(entities) == 1  # store_memory wrote what TestModel sent
        assert await stored(s.backend, s.second) == [
            ("user", "remember this"),
            ("assistant", "done"),
        ]


async def test_concurrent_runs_keep_their_own_blocks() -> None:
    import asyncio

    async with sessions() as s:
        await s.backend.add_message(s.first, "user", FACT)
        await s.backend.add_message(s.first, "user", "My dog is called Rex")
        seen: dict[str, str | None] = {}

        def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            prompt = str(getattr(messages[-1].parts[-1], "content", ""))
            seen[prompt] = info.instructions
            return ModelResponse(parts=[TextPart("ok")])

        memory = NamsMemory(s.backend, user_id=s.user_id, conversation_id=s.second, tools=False)
        agent = Agent(FunctionModel(answer), capabilities=[memory])
        await asyncio.gather(agent.run("which tea?"), agent.run("what is my dog called?"))
        assert "oolong" in (seen["which tea?"] or "")
        assert "Rex" in (seen["what is my dog called?"] or "")
        assert "Rex" not in (seen["which tea?"] or "")


async def test_a_failing_backend_never_fails_the_run(logger: RecordingLogger) -> None:
    async with sessions() as s:
        backend: Any = Faulty(s.backend, {"add_message": "raise"})
        memory = NamsMemory(
            backend, user_id=s.user_id, conversation_id=s.second, tools=False, logger=logger
        )
        result = await Agent(FunctionModel(Recorder("Fine.")), capabilities=[memory]).run(QUESTION)
        assert result.output == "Fine."
        assert backend.calls["add_message"] == 2  # the user's text, then the answer
        assert logger.warnings == [
            "persist user message failed",
            "persist assistant message failed",
        ]
        assert await stored(s.backend, s.second) == []
