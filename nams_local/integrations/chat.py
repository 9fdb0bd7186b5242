"""A small chat-model interface in the OpenAI chat-completions shape.

Messages are plain dicts exactly as the OpenAI API takes them (``role``, ``content`` as a
string or a list of parts, ``tool_calls`` on assistant messages, ``tool`` messages with
``tool_call_id``), so any OpenAI-compatible server — and code already written for one —
fits without conversion. ``tools`` and ``tool_choice`` pass straight through.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "ChatMessage",
    "ChatModel",
    "ChatResponse",
    "StreamChunk",
    "ToolCallRequest",
]

ChatMessage = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolCallRequest:
    """A tool call the model asked for; ``arguments`` is JSON text, as on the wire."""

    id: str
    name: str
    arguments: str = "{}"

    def parsed_arguments(self) -> Any:
        return json.loads(self.arguments or "{}")

    def to_openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(slots=True)
class ChatResponse:
    """One model step's result. ``raw`` keeps the provider's own object when there is one."""

    text: str | None = None
    tool_calls: list[ToolCallRequest] = field(default_factory=list)
    finish_reason: str | None = None
    raw: Any = None

    def as_message(self) -> ChatMessage:
        """The assistant message to append to the conversation."""
        message: ChatMessage = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            message["tool_calls"] = [call.to_openai() for call in self.tool_calls]
        return message


@dataclass(slots=True)
class StreamChunk:
    """A piece of a streamed step: text delta, a complete tool call, or the finish reason."""

    text: str | None = None
    tool_call: ToolCallRequest | None = None
    finish_reason: str | None = None
    raw: Any = None


@runtime_checkable
class ChatModel(Protocol):
    """What nams-local wraps with memory: async generate and stream."""

    async def generate(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        tool_choice: Any = None,
        **options: Any,
    ) -> ChatResponse: ...

    def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        tool_choice: Any = None,
        **options: Any,
    ) -> AsyncIterator[StreamChunk]: ...
