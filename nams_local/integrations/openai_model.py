"""``OpenAIChatModel``: the ``ChatModel`` interface over the official ``openai`` package.

Any OpenAI-compatible server works through it (vLLM, Ollama, LM Studio, a LiteLLM proxy):
point the client's ``base_url`` at it. A sync ``OpenAI`` client is run in a worker thread;
an ``AsyncOpenAI`` client is awaited directly.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Sequence
from typing import Any

from .chat import ChatMessage, ChatResponse, StreamChunk, ToolCallRequest

__all__ = ["OpenAIChatModel", "is_async_callable", "response_from_completion"]


def is_async_callable(fn: Any) -> bool:
    """True for ``async def`` functions, also behind ``functools.wraps`` decorators (the
    ``openai`` client decorates its async ``create``)."""
    return inspect.iscoroutinefunction(inspect.unwrap(fn))


def response_from_completion(completion: Any) -> ChatResponse:
    """A ``ChatResponse`` from an OpenAI ``ChatCompletion`` (first choice)."""
    choice = completion.choices[0]
    message = choice.message
    calls = [
        ToolCallRequest(
            id=call.id, name=call.function.name, arguments=call.function.arguments or "{}"
        )
        for call in (message.tool_calls or [])
        if getattr(call, "function", None) is not None
    ]
    return ChatResponse(
        text=message.content,
        tool_calls=calls,
        finish_reason=choice.finish_reason,
        raw=completion,
    )


class _ToolCallAssembler:
    """Stream deltas carry tool calls in pieces (by index); join them into whole calls."""

    def __init__(self) -> None:
        self.parts: dict[int, dict[str, str]] = {}

    def add(self, deltas: Sequence[Any]) -> None:
        for delta in deltas:
            part = self.parts.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
            if delta.id:
                part["id"] = delta.id
            function = getattr(delta, "function", None)
            if function is not None:
                part["name"] += function.name or ""
                part["arguments"] += function.arguments or ""

    def calls(self) -> list[ToolCallRequest]:
        return [
            ToolCallRequest(id=p["id"], name=p["name"], arguments=p["arguments"] or "{}")
            for _, p in sorted(self.parts.items())
        ]


class OpenAIChatModel:
    """``OpenAIChatModel(client, "gpt-4o-mini", temperature=0)``; options pass through."""

    def __init__(self, client: Any, model: str, **defaults: Any) -> None:
        self.client = client
        self.model = model
        self.defaults = defaults
        self._async = is_async_callable(client.chat.completions.create)

    async def _create(self, **kwargs: Any) -> Any:
        if self._async:
            return await self.client.chat.completions.create(**kwargs)
        return await asyncio.to_thread(self.client.chat.completions.create, **kwargs)

    def _kwargs(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[dict[str, Any]] | None,
        tool_choice: Any,
        options: dict[str, Any],
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            **self.defaults,
            **options,
        }
        if tools is not None:
            kwargs["tools"] = list(tools)
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return kwargs

    async def generate(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        tool_choice: Any = None,
        **options: Any,
    ) -> ChatResponse:
        completion = await self._create(**self._kwargs(messages, tools, tool_choice, options))
        return response_from_completion(completion)

    async def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        tool_choice: Any = None,
        **options: Any,
    ) -> AsyncIterator[StreamChunk]:
        kwargs = self._kwargs(messages, tools, tool_choice, options)
        kwargs["stream"] = True
        stream = await self._create(**kwargs)
        assembler = _ToolCallAssembler()
        finish: str | None = None
        if self._async:
            async for chunk in stream:
                for out in _chunk_texts(chunk, assembler):
                    yield out
                finish = _finish(chunk) or finish
        else:
            iterator = iter(stream)
            sentinel = object()
            while (chunk := await asyncio.to_thread(next, iterator, sentinel)) is not sentinel:
                for out in _chunk_texts(chunk, assembler):
                    yield out
                finish = _finish(chunk) or finish
        for call in assembler.calls():
            yield StreamChunk(tool_call=call)
        yield StreamChunk(finish_reason=finish)


def _chunk_texts(chunk: Any, assembler: _ToolCallAssembler) -> list[StreamChunk]:
    out: list[StreamChunk] = []
    for choice in chunk.choices[:1]:
        delta = choice.delta
        if delta is None:
            continue
        if delta.content:
            out.append(StreamChunk(text=delta.content, raw=chunk))
        if delta.tool_calls:
            assembler.add(delta.tool_calls)
    return out


def _finish(chunk: Any) -> str | None:
    for choice in chunk.choices[:1]:
        reason: str | None = choice.finish_reason
        return reason
    return None
