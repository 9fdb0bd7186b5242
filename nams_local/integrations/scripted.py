"""``ScriptedChatModel``: a deterministic, offline chat model for tests, demos and CI.

Each call takes the next scripted reply (text, tool calls, stream chunks, or an error)
and records the prompt it received, so a test can assert exactly what the model saw —
for example that the second session's prompt carries the memory block.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .chat import ChatMessage, ChatResponse, StreamChunk, ToolCallRequest

__all__ = ["RecordedCall", "ScriptedChatModel", "ScriptedReply"]


@dataclass(slots=True)
class ScriptedReply:
    """One scripted model step.

    ``chunks`` (stream only) overrides how the text is split; ``fail_after`` makes a stream
    raise ``error`` after that many chunks; ``error`` alone makes ``generate`` raise.
    """

    text: str | None = None
    tool_calls: list[ToolCallRequest] = field(default_factory=list)
    chunks: list[str] | None = None
    error: BaseException | None = None
    fail_after: int | None = None
    finish_reason: str | None = None


@dataclass(slots=True)
class RecordedCall:
    kind: str
    messages: list[ChatMessage]
    tools: list[dict[str, Any]] | None
    tool_choice: Any
    options: dict[str, Any]

    @property
    def last_user_text(self) -> str:
        for message in reversed(self.messages):
            if message.get("role") == "user":
                content = message.get("content")
                if isinstance(content, str):
                    return content
                if isinstance(content, list):
                    return "".join(p.get("text", "") for p in content if p.get("type") == "text")
        return ""


Script = Sequence[ScriptedReply | str] | Callable[[list[ChatMessage]], ScriptedReply | str]


class ScriptedChatModel:
    """Replies from a script: a list consumed in order, or a function of the prompt."""

    def __init__(self, script: Script) -> None:
        self._script = script
        self._next = 0
        self.calls: list[RecordedCall] = []

    def _reply(self, messages: list[ChatMessage]) -> ScriptedReply:
        if callable(self._script):
            reply = self._script(messages)
        else:
            if self._next >= len(self._script):
                raise RuntimeError(
                    f"ScriptedChatModel ran out of replies after {len(self._script)} calls"
                )
            reply = self._script[self._next]
            self._next += 1
        return ScriptedReply(text=reply) if isinstance(reply, str) else reply

    def _record(
        self,
        kind: str,
        messages: Sequence[ChatMessage],
        tools: Sequence[dict[str, Any]] | None,
        tool_choice: Any,
        options: dict[str, Any],
    ) -> list[ChatMessage]:
        snapshot = copy.deepcopy(list(messages))
        self.calls.append(
            RecordedCall(
                kind=kind,
                messages=snapshot,
                tools=list(tools) if tools is not None else None,
                tool_choice=tool_choice,
                options=options,
            )
        )
        return snapshot

    async def generate(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        tool_choice: Any = None,
        **options: Any,
    ) -> ChatResponse:
        reply = self._reply(self._record("generate", messages, tools, tool_choice, options))
        if reply.error is not None:
            raise reply.error
        finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        return ChatResponse(
            text=reply.text, tool_calls=list(reply.tool_calls), finish_reason=finish
        )

    async def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        tool_choice: Any = None,
        **options: Any,
    ) -> AsyncIterator[StreamChunk]:
        reply = self._reply(self._record("stream", messages, tools, tool_choice, options))
        pieces = reply.chunks
        if pieces is None:
            words = (reply.text or "").split(" ")
            pieces = [w if i == 0 else " " + w for i, w in enumerate(words)] if reply.text else []
        sent = 0
        for piece in pieces:
            if reply.fail_after is not None and sent >= reply.fail_after:
                raise reply.error or RuntimeError("scripted stream failure")
            yield StreamChunk(text=piece)
            sent += 1
        for call in reply.tool_calls:
            yield StreamChunk(tool_call=call)
        if reply.fail_after is not None and sent >= reply.fail_after and reply.error:
            raise reply.error
        finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        yield StreamChunk(finish_reason=finish)
