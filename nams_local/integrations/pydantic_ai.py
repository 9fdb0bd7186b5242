"""pydantic-ai: ``NamsMemory``, a capability that gives an agent long-term memory.

``Agent(model, capabilities=[NamsMemory(backend, user_id=...)])``: at the start of each run
(``before_run``, once, however many model requests the run makes) the memories for the
run's prompt are recalled; the run's instructions carry the memory block on every request
of that run; at the end (``after_run``) the turn — the prompt's text, then the output —
is stored once. The capability also registers ``query_memory`` and ``store_memory`` as a
toolset (``tools=False`` leaves them out; ``memory_toolset`` builds the toolset alone).
Per-run state lives on the instance ``for_run`` returns, so concurrent runs of one agent
never share a recalled block. Importing this module imports ``pydantic_ai`` (the
``pydantic-ai`` extra).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from pydantic_ai import ModelRetry, RunContext
from pydantic_ai import Tool as PydanticTool
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.run import AgentRunResult
from pydantic_ai.toolsets import FunctionToolset
from pydantic_core import to_json

from ..backend import MemoryBackend
from .agent_runs import RunMemory
from .middleware import Turn
from .tool import Tool, ToolSet

__all__ = ["NamsMemory", "memory_toolset"]


def _prompt_text(prompt: str | Sequence[Any] | None) -> str:
    """The text of a run's user prompt (text parts joined; images and files skipped)."""
    if prompt is None:
        return ""
    if isinstance(prompt, str):
        return prompt.strip()
    return "".join(part for part in prompt if isinstance(part, str)).strip()


def _output_text(output: Any) -> str:
    """A run's output as stored: text as is, structured output as its JSON."""
    if isinstance(output, str):
        return output
    return to_json(output).decode()


def _pydantic_tool(tool: Tool) -> PydanticTool[Any]:
    async def run(**arguments: Any) -> Any:
        try:
            return await tool.run(arguments)
        except ValidationError as exc:  # the model sent bad arguments: let it try again
            raise ModelRetry(str(exc)) from None

    return PydanticTool.from_schema(run, tool.name, tool.description, tool.parameters)


def memory_toolset(tools: ToolSet) -> FunctionToolset[Any]:
    """A tool set (e.g. ``Nams.tools(scope)`` or ``RunMemory.tools()``) as a pydantic-ai
    toolset."""
    return FunctionToolset([_pydantic_tool(tool) for tool in tools.values()])


@dataclass(init=False)
class NamsMemory(AbstractCapability[Any]):
    """Long-term memory for a pydantic-ai agent (see the module docstring).

    Args:
        backend: any ``MemoryBackend``; ``user_id`` / ``conversation_id`` as in
            ``RunMemory``; ``tools``: register the memory tools too; other keyword
            arguments are ``create_nams`` options (``logger``, ``max_memories``, ...).
    """

    memory: RunMemory
    with_tools: bool

    def __init__(
        self,
        backend: MemoryBackend,
        *,
        user_id: str,
        conversation_id: str | None = None,
        tools: bool = True,
        **config: Any,
    ) -> None:
        self.id = None
        self.description = None
        self.defer_loading = False
        self.memory = RunMemory(backend, user_id=user_id, conversation_id=conversation_id, **config)
        self.with_tools = tools
        self._toolset = memory_toolset(self.memory.tools()) if tools else None
        self._turn: Turn | None = None
        self._block = ""

    async def for_run(self, ctx: RunContext[Any]) -> NamsMemory:
        run = copy.copy(self)  # shares the memory client; owns this run's turn and block
        run._turn, run._block = None, ""
        return run

    def get_instructions(self) -> Any:
        def memory_block(ctx: RunContext[Any]) -> str:
            return self._block

        return memory_block

    def get_toolset(self) -> Any:
        return self._toolset

    async def before_run(self, ctx: RunContext[Any]) -> None:
        self._turn = await self.memory.recall(_prompt_text(ctx.prompt))
        self._block = self.memory.block(self._turn)

    async def after_run(
        self, ctx: RunContext[Any], *, result: AgentRunResult[Any]
    ) -> AgentRunResult[Any]:
        turn = self._turn or Turn(
            prompt=[], user_text=_prompt_text(ctx.prompt), continues=False, memories=[]
        )
        await self.memory.remember(turn, _output_text(result.output))
        return result
