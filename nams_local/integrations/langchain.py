"""LangChain v1: ``NamsMiddleware`` for ``create_agent``, and the memory tools as LangChain
tools.

``create_agent(model, tools=memory_tools(...), middleware=[NamsMiddleware(backend,
user_id=...)])``: before the agent runs, the memories for the user's last message are
recalled once; every model call of the run gets them appended to its system message
(not written into the agent's state, so checkpoints never hold them); after the agent, the
turn (the user's text, then the final answer) is stored once. Sync (``invoke``) and async
(``ainvoke``) agents both work; the sync hooks run the memory coroutines on the background
loop of ``integrations.sync``. Importing this module imports ``langchain`` (the
``langchain`` extra).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ModelRequest,
    ModelResponse,
    PrivateStateAttr,
)
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.channels.untracked_value import UntrackedValue
from langgraph.runtime import Runtime

from ..backend import MemoryBackend
from ..scope import ScopeLike
from .agent_runs import RunMemory, with_block
from .middleware import Turn
from .nams import create_nams
from .sync import shared_loop
from .tool import Tool, ToolSet

__all__ = ["NamsAgentState", "NamsMiddleware", "langchain_tools", "memory_tools"]


class NamsAgentState(AgentState[Any]):
    """The agent state plus this run's recalled block and user text (run-scoped: neither
    is checkpointed nor part of the agent's input or output)."""

    nams_memory_block: NotRequired[Annotated[str, UntrackedValue, PrivateStateAttr]]
    nams_user_text: NotRequired[Annotated[str, UntrackedValue, PrivateStateAttr]]


def _last(messages: Sequence[AnyMessage], kind: type[AnyMessage]) -> AnyMessage | None:
    for message in reversed(messages):
        if isinstance(message, kind):
            return message
    return None


def _answer(messages: Sequence[AnyMessage]) -> str:
    """The run's final answer: the last AI message's text when it asks for no tool."""
    last = _last(messages, AIMessage)
    if not isinstance(last, AIMessage) or last.tool_calls:
        return ""
    return last.text


class NamsMiddleware(AgentMiddleware[NamsAgentState, Any, Any]):
    """Memory around a LangChain agent run (see the module docstring).

    Args:
        backend: any ``MemoryBackend``; ``user_id`` / ``conversation_id`` as in
            ``RunMemory``; other keyword arguments are ``create_nams`` options.
    """

    state_schema = NamsAgentState

    def __init__(
        self,
        backend: MemoryBackend,
        *,
        user_id: str,
        conversation_id: str | None = None,
        **config: Any,
    ) -> None:
        super().__init__()
        self.memory = RunMemory(backend, user_id=user_id, conversation_id=conversation_id, **config)
        self.tools = []

    async def abefore_agent(
        self, state: NamsAgentState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        human = _last(state["messages"], HumanMessage)
        user_text = human.text.strip() if human is not None else ""
        turn = await self.memory.recall(user_text)
        return {"nams_memory_block": self.memory.block(turn), "nams_user_text": user_text}

    def before_agent(self, state: NamsAgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        return shared_loop().run(self.abefore_agent(state, runtime))

    @staticmethod
    def _with_memory(request: ModelRequest[Any]) -> ModelRequest[Any]:
        block = request.state.get("nams_memory_block", "")
        if not isinstance(block, str) or not block:
            return request
        current = request.system_message.text if request.system_message is not None else None
        return request.override(system_message=SystemMessage(with_block(current, block) or ""))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        return await handler(self._with_memory(request))

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        return handler(self._with_memory(request))

    async def aafter_agent(
        self, state: NamsAgentState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        turn = Turn(
            prompt=[],
            user_text=state.get("nams_user_text", ""),
            continues=False,
            memories=[],
        )
        await self.memory.remember(turn, _answer(state["messages"]))
        return None

    def after_agent(self, state: NamsAgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        return shared_loop().run(self.aafter_agent(state, runtime))


def _langchain_tool(tool: Tool) -> BaseTool:
    """One of our ``Tool`` objects as a LangChain ``StructuredTool`` (JSON answer text)."""

    async def run(**arguments: Any) -> str:
        return json.dumps(await tool.run(arguments))

    def run_sync(**arguments: Any) -> str:
        return shared_loop().run(run(**arguments))

    return StructuredTool(
        name=tool.name,
        description=tool.description,
        args_schema=tool.parameters,
        coroutine=run,
        func=run_sync,
    )


def langchain_tools(tools: ToolSet) -> list[BaseTool]:
    """A tool set (e.g. ``Nams.tools(scope)``) as LangChain tools, in order."""
    return [_langchain_tool(tool) for tool in tools.values()]


def memory_tools(backend: MemoryBackend, scope: ScopeLike, **config: Any) -> list[BaseTool]:
    """``query_memory`` and ``store_memory`` for ``scope`` as LangChain tools."""
    return langchain_tools(create_nams(backend, **config).tools(scope))
