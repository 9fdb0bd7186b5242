"""``ToolLoop``: the agent loop of the AI SDK (``generateText``/``streamText`` with tools and
``maxSteps``), for any ``ChatModel``.

Each step: ``prepare_step(step_number, steps)`` may override ``tool_choice`` and
``active_tools`` for that step (what ``enforce_query_memory`` needs); the model is called;
every tool call it makes is executed (sync or async, concurrently, in call order) and
answered with a ``tool`` message; the loop continues until a step makes no tool call or
``max_steps`` steps ran. ``on_finish(result)`` then sees every step (what
``ensure_memory_stored`` needs). A tool that raises, an unknown tool or unparsable
arguments become an error result the model can read — never a crash of the loop.

While a tool runs, :func:`current_tool_call_id` gives the id of the model's tool call it
answers. A context variable rather than a second ``execute`` parameter keeps every tool
``execute(arguments)`` — app tools, memory tools, MCP proxies — while wrappers that need
the id (hooks mode's ``PreToolUse``/``PostToolUse`` inputs) can read it.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from .chat import ChatMessage, ChatModel, ChatResponse, ToolCallRequest
from .tool import Tool

__all__ = [
    "LoopEvent",
    "LoopResult",
    "PrepareStep",
    "StepOverrides",
    "StepResult",
    "ToolChoice",
    "ToolLoop",
    "ToolResult",
    "current_tool_call_id",
    "named_tool",
    "tool_choice_name",
]

#: ``"auto"``, ``"required"``, ``"none"``, a tool's name, or a named-tool dict (the OpenAI
#: ``{"type": "function", "function": {"name": ...}}`` or ``{"type": "tool", "tool_name": ...}``).
ToolChoice = str | Mapping[str, Any]
_MODES = frozenset({"auto", "required", "none"})

_TOOL_CALL_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "nams_tool_call_id", default=None
)


def current_tool_call_id() -> str | None:
    """The id of the tool call being executed by a ``ToolLoop``, else None (a direct call)."""
    return _TOOL_CALL_ID.get()


def named_tool(name: str) -> dict[str, Any]:
    """The OpenAI ``tool_choice`` that forces the tool ``name``."""
    return {"type": "function", "function": {"name": name}}


def tool_choice_name(choice: object) -> str | None:
    """The forced tool's name when ``choice`` names one, else None."""
    if isinstance(choice, str):
        return None if choice in _MODES else choice
    if isinstance(choice, Mapping):
        function = choice.get("function")
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            return str(function["name"])
        for key in ("tool_name", "toolName", "name"):
            if isinstance(choice.get(key), str):
                return str(choice[key])
    return None


def _openai_choice(choice: ToolChoice) -> Any:
    name = tool_choice_name(choice)
    return named_tool(name) if name is not None else choice


class StepOverrides(TypedDict, total=False):
    """What ``prepare_step`` may change for one step (as the AI SDK's ``prepareStep``)."""

    tool_choice: ToolChoice
    #: Names of the tools the model is shown in this step (all when absent).
    active_tools: Sequence[str]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """One executed tool call. ``input`` is the parsed arguments (the raw text if they
    did not parse); ``output`` is what the tool returned, or ``{"error": ...}``."""

    tool_call_id: str
    tool_name: str
    input: Any
    output: Any
    is_error: bool = False


@dataclass(slots=True)
class StepResult:
    """One model call and the tool calls it made."""

    step_number: int
    text: str
    tool_calls: list[ToolCallRequest]
    tool_results: list[ToolResult]
    finish_reason: str | None
    #: The ``tool_choice`` this step was called with (after ``prepare_step``).
    tool_choice: Any
    response: ChatResponse


@dataclass(slots=True)
class LoopResult:
    """The whole run: ``text`` is the last step's text; ``messages`` are the assistant and
    tool messages the loop added after the input messages."""

    text: str
    steps: list[StepResult]
    messages: list[ChatMessage]
    finish_reason: str | None

    @property
    def tool_calls(self) -> list[ToolCallRequest]:
        """Every tool call of every step, in order."""
        return [call for step in self.steps for call in step.tool_calls]

    @property
    def tool_results(self) -> list[ToolResult]:
        return [result for step in self.steps for result in step.tool_results]


@dataclass(frozen=True, slots=True)
class LoopEvent:
    """One item of ``ToolLoop.stream``: a text delta, a tool call, a tool result, a
    finished step, or (last) the finished run."""

    type: Literal["text", "tool-call", "tool-result", "step-finish", "finish"]
    step_number: int
    text: str | None = None
    tool_call: ToolCallRequest | None = None
    tool_result: ToolResult | None = None
    step: StepResult | None = None
    result: LoopResult | None = None


PrepareStep = Callable[
    [int, list[StepResult]], StepOverrides | Awaitable[StepOverrides | None] | None
]
OnFinish = Callable[[LoopResult], Any]
Prompt = str | Sequence[ChatMessage]


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def _tool_message(result: ToolResult) -> ChatMessage:
    output = result.output
    content = output if isinstance(output, str) else json.dumps(output, default=str)
    return {"role": "tool", "tool_call_id": result.tool_call_id, "content": content}


@dataclass
class ToolLoop:
    """Runs ``model`` with ``tools`` until it answers without calling a tool.

    ``tools`` is a ``ToolSet`` (name → ``Tool``) or a list of tools. ``options`` given to
    :meth:`run` / :meth:`stream` go to every model call (e.g. ``temperature``).
    """

    model: ChatModel
    tools: Mapping[str, Tool] | Iterable[Tool] = field(default_factory=dict)
    prepare_step: PrepareStep | None = None
    on_finish: OnFinish | None = None
    max_steps: int = 10
    tool_choice: ToolChoice = "auto"

    def __post_init__(self) -> None:
        if self.max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        tools = self.tools
        self._tools: dict[str, Tool] = (
            dict(tools) if isinstance(tools, Mapping) else {t.name: t for t in tools}
        )

    async def run(self, prompt: Prompt, **options: Any) -> LoopResult:
        """Run the loop to the end and return every step."""
        result: LoopResult | None = None
        async for event in self._events(prompt, options, streaming=False):
            if event.result is not None:
                result = event.result
        assert result is not None  # _events always ends with a finish event
        return result

    async def stream(self, prompt: Prompt, **options: Any) -> AsyncIterator[LoopEvent]:
        """Stream the loop: model text as it arrives, tool calls, their results, and a
        final ``finish`` event carrying the :class:`LoopResult` (after ``on_finish``)."""
        async for event in self._events(prompt, options, streaming=True):
            yield event

    async def _events(
        self, prompt: Prompt, options: dict[str, Any], *, streaming: bool
    ) -> AsyncIterator[LoopEvent]:
        messages: list[ChatMessage] = (
            [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
        )
        start = len(messages)
        steps: list[StepResult] = []
        for step_number in range(self.max_steps):
            overrides: StepOverrides = {}
            if self.prepare_step is not None:
                prepared: StepOverrides | None = await _maybe_await(
                    self.prepare_step(step_number, list(steps))
                )
                overrides = prepared or StepOverrides()
            choice = overrides.get("tool_choice", self.tool_choice)
            active = overrides.get("active_tools")
            definitions = [
                tool.definition()
                for name, tool in self._tools.items()
                if active is None or name in active
            ]
            call_options: dict[str, Any] = {
                "tools": definitions or None,
                "tool_choice": _openai_choice(choice) if definitions else None,
                **options,
            }
            response = ChatResponse()
            if streaming:
                async for event in self._stream_step(step_number, messages, call_options):
                    if isinstance(event, ChatResponse):
                        response = event
                    else:
                        yield event
            else:
                response = await self.model.generate(messages, **call_options)
            messages.append(response.as_message())
            results = list(await asyncio.gather(*map(self._execute, response.tool_calls)))
            for executed in results:
                messages.append(_tool_message(executed))
                if streaming:
                    yield LoopEvent("tool-result", step_number, tool_result=executed)
            step = StepResult(
                step_number=step_number,
                text=response.text or "",
                tool_calls=list(response.tool_calls),
                tool_results=results,
                finish_reason=response.finish_reason,
                tool_choice=call_options["tool_choice"],
                response=response,
            )
            steps.append(step)
            yield LoopEvent("step-finish", step_number, step=step)
            if not response.tool_calls:
                break
        last = steps[-1]
        result = LoopResult(
            text=last.text,
            steps=steps,
            messages=messages[start:],
            finish_reason=last.finish_reason,
        )
        if self.on_finish is not None:
            await _maybe_await(self.on_finish(result))
        yield LoopEvent("finish", last.step_number, result=result)

    async def _stream_step(
        self, step_number: int, messages: list[ChatMessage], call_options: dict[str, Any]
    ) -> AsyncIterator[LoopEvent | ChatResponse]:
        """The step's events, then (last) the response assembled from the chunks."""
        texts: list[str] = []
        calls: list[ToolCallRequest] = []
        finish: str | None = None
        async for chunk in self.model.stream(messages, **call_options):
            if chunk.text:
                texts.append(chunk.text)
                yield LoopEvent("text", step_number, text=chunk.text)
            if chunk.tool_call is not None:
                calls.append(chunk.tool_call)
                yield LoopEvent("tool-call", step_number, tool_call=chunk.tool_call)
            if chunk.finish_reason is not None:
                finish = chunk.finish_reason
        yield ChatResponse(text="".join(texts) or None, tool_calls=calls, finish_reason=finish)

    async def _execute(self, call: ToolCallRequest) -> ToolResult:
        tool = self._tools.get(call.name)
        try:
            arguments = call.parsed_arguments()
        except ValueError as exc:
            return self._error(call, call.arguments, f"invalid JSON arguments: {exc}")
        if tool is None:
            return self._error(call, arguments, f"unknown tool {call.name!r}")
        if not isinstance(arguments, dict):
            return self._error(call, arguments, "tool arguments must be a JSON object")
        token = _TOOL_CALL_ID.set(call.id)
        try:
            output = await tool.run(arguments)
        except Exception as exc:
            return self._error(call, arguments, str(exc) or type(exc).__name__)
        finally:
            _TOOL_CALL_ID.reset(token)
        return ToolResult(call.id, call.name, arguments, output)

    @staticmethod
    def _error(call: ToolCallRequest, arguments: Any, message: str) -> ToolResult:
        return ToolResult(call.id, call.name, arguments, {"error": message}, is_error=True)
