"""What hooks mode stores for a generation, and what it loads back (provider-behavior §7.1–7.2).

A finished generation becomes *turns*: the user's prompt, the assistant's text, and one
audit turn per tool call and per tool result, so the conversation in memory shows what the
agent did. Audit turns carry ``metadata["nams_kind"]`` (``tool-call`` / ``tool-result``);
``session_history`` drops them again, because a model must not see them as things it said.

Messages are in the OpenAI chat shape (assistant ``tool_calls``, ``tool`` messages with
``tool_call_id``). Tool results that are JSON text of an object or array are re-encoded
compactly, so the audit text is the same as the TypeScript package writes for the same
result whatever spacing the tool loop used.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .chat import ChatMessage
from .lifecycle import SessionTurn

__all__ = [
    "AUDIT_MAX_CHARS",
    "NAMS_KIND",
    "is_audit",
    "prompt_text",
    "session_history",
    "turns_from_response",
]

#: Metadata key marking a stored audit record (``namsKind`` in the TypeScript package).
NAMS_KIND = "nams_kind"
AUDIT_MAX_CHARS = 4000


def _compact(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def _text_of(content: Any) -> str:
    """A message's text: the string itself, or its ``text`` parts concatenated."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", ""))
            for p in content
            if isinstance(p, Mapping) and p.get("type") == "text"
        )
    return ""


def prompt_text(prompt: str | Sequence[Mapping[str, Any]] | None) -> str:
    """The user text of a prompt: a string as is, or the text of each user message joined
    by newlines, empty ones dropped."""
    if prompt is None:
        return ""
    if isinstance(prompt, str):
        return prompt
    texts = (_text_of(m.get("content")) for m in prompt if m.get("role") == "user")
    return "\n".join(t for t in texts if t)


def _audit(kind: str, tool_name: str | None, call_id: str | None, payload: Any) -> SessionTurn:
    name = tool_name or "unknown"
    content = f"[{kind}] {name}: {_compact(payload)}"[:AUDIT_MAX_CHARS]
    metadata = {NAMS_KIND: kind, "tool_name": tool_name, "tool_call_id": call_id}
    return {"role": "assistant", "content": content, "metadata": metadata}


def _call_input(function: Mapping[str, Any]) -> Any:
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments if arguments is not None else {}


def _result_payload(content: Any) -> Any:
    if isinstance(content, str):
        try:
            decoded = json.loads(content)
        except ValueError:
            return content
        return decoded if isinstance(decoded, dict | list) else content
    if isinstance(content, Mapping) and "value" in content:
        return content["value"]
    return content


def _assistant_turns(message: Mapping[str, Any], names: dict[str, str]) -> Iterable[SessionTurn]:
    text = _text_of(message.get("content"))
    if text:
        yield {"role": "assistant", "content": text}
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        name = function.get("name")
        call_id = call.get("id")
        if call_id and name:
            names[call_id] = name
        yield _audit("tool-call", name, call_id, _call_input(function))


def turns_from_response(messages: Sequence[Mapping[str, Any]]) -> list[SessionTurn]:
    """Assistant text and audit turns of the messages a generation added, in order."""
    turns: list[SessionTurn] = []
    names: dict[str, str] = {}
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            turns.extend(_assistant_turns(message, names))
        elif role == "tool":
            call_id = message.get("tool_call_id")
            name = message.get("name") or (names.get(call_id) if call_id else None)
            turns.append(
                _audit("tool-result", name, call_id, _result_payload(message.get("content")))
            )
    return turns


def is_audit(metadata: Mapping[str, Any] | None) -> bool:
    """Whether stored metadata marks an audit record (either spelling)."""
    if not metadata:
        return False
    return bool(metadata.get(NAMS_KIND) or metadata.get("namsKind"))


def session_history(messages: Iterable[Any]) -> list[ChatMessage]:
    """``{role, content}`` of stored user/assistant messages that are not audit records."""
    return [
        {"role": m.role, "content": m.content}
        for m in messages
        if m.role in ("user", "assistant") and not is_audit(m.metadata)
    ]
