"""``NamsMiddleware`` in a real LangChain v1 ``create_agent`` loop with LangChain's own fake
chat model: memory reaches the next session's model, each run is stored once, tools work,
and a failing backend costs a warning, never the run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatResult
from pydantic import Field

from nams_local.integrations.langchain import NamsMiddleware, memory_tools
from tests.core.wrappers import Faulty
from tests.recording_logger import RecordingLogger

from .runs import FACT, QUESTION, sessions, stored


class RecordingChat(GenericFakeChatModel):
    """LangChain's fake chat model, keeping every prompt it was sent; tools bind as is."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


def _chat(*replies: AIMessage | str) -> RecordingChat:
    script: Iterator[AIMessage | str] = iter(replies)
    return RecordingChat(messages=script)


def _system(prompt: list[BaseMessage]) -> str:
    return "\n".join(m.text for m in prompt if isinstance(m, SystemMessage))


async def test_second_session_model_sees_the_first_and_each_run_is_stored_once() -> None:
    async with sessions() as s:
        first_model = _chat(
            AIMessage(
                "", tool_calls=[{"name": "query_memory", "args": {"query": "tea"}, "id": "c1"}]
            ),
            "Noted: oolong.",
        )
        agent = create_agent(
            first_model,
            tools=memory_tools(s.backend, {"user_id": s.user_id, "conversation_id": s.first}),
            middleware=[NamsMiddleware(s.backend, user_id=s.user_id, conversation_id=s.first)],
            system_prompt="You are helpful.",
        )
        result = await agent.ainvoke({"messages": [{"role": "user", "content": FACT}]})
        assert result["messages"][-1].text == "Noted: oolong."
        assert len(first_model.seen) == 2  # a tool step, then the answer
        # the tool ran for real and its answer went back to the model
        assert json.loads(first_model.seen[1][-1].text)["found"] is False
        assert await stored(s.backend, s.first) == [("user", FACT), ("assistant", "Noted: oolong.")]

        second_model = _chat("You like oolong.")
        agent = create_agent(
            second_model,
            middleware=[NamsMiddleware(s.backend, user_id=s.user_id, conversation_id=s.second)],
            system_prompt="You are helpful.",
        )
        await agent.ainvoke({"messages": [{"role": "user", "content": QUESTION}]})
        system = _system(second_model.seen[0])
        assert system.startswith("You are helpful.")
        assert "oolong from Taiwan" in system
        # the block is in the instructions, not in the user's message or the agent's state
        assert second_model.seen[0][-1].text == QUESTION
        assert await stored(s.backend, s.second) == [
            ("user", QUESTION),
            ("assistant", "You like oolong."),
        ]


def test_a_sync_agent_gets_memory_too() -> None:
    import asyncio

    async def scenario() -> tuple[RecordingChat, list[tuple[str, str]], Any]:
        async with sessions() as s:
            await s.backend.add_message(s.first, "user", FACT)
            model = _chat("Oolong!")
            middleware = NamsMiddleware(s.backend, user_id=s.user_id, conversation_id=s.second)
            agent = create_agent(model, middleware=[middleware])
            await asyncio.to_thread(
                lambda: agent.invoke({"messages": [{"role": "user", "content": QUESTION}]})
            )
            return model, await stored(s.backend, s.second), None

    model, rows, _ = asyncio.run(scenario())
    assert "oolong from Taiwan" in _system(model.seen[0])
    assert rows == [("user", QUESTION), ("assistant", "Oolong!")]


async def test_a_failing_backend_never_fails_the_run(logger: RecordingLogger) -> None:
    async with sessions() as s:
        backend = Faulty(s.backend, {"search_user_messages": "raise"})
        model = _chat("Still answering.")
        agent = create_agent(
            model,
            middleware=[
                NamsMiddleware(backend, user_id=s.user_id, conversation_id=s.second, logger=logger)
            ],
        )
        result = await agent.ainvoke({"messages": [{"role": "user", "content": QUESTION}]})
        assert result["messages"][-1].text == "Still answering."
        assert backend.calls["search_user_messages"] == 1
        assert [level for level, _, _ in logger.records] == ["warn"]
        assert await stored(s.backend, s.second) == [
            ("user", QUESTION),
            ("assistant", "Still answering."),
        ]
