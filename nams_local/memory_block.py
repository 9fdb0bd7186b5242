"""The memory block: how recalled memories enter the prompt (provider-behavior §3.7–3.8).

Messages are OpenAI chat-completions dicts (``role``, ``content`` as a string or a list of
parts). Injection is copy-on-write: the caller's list and message dicts are never changed,
so a retried call cannot stack a second block.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .retrieval import MemoryHit

__all__ = [
    "GRAPH_NOTE",
    "HEADER",
    "PAST_NOTE",
    "format_memory_block",
    "inject_memory_block",
    "last_user_index",
    "query_text",
]

HEADER = "Relevant long-term memory about this user (use it to personalise your answer):"
GRAPH_NOTE = "A [graph] line is a stored relationship, written (subject)-[RELATIONSHIP]->(object)."
#: Added when a [graph] line carries an interval (a fact that no longer holds).
PAST_NOTE = (
    "A [graph] line written (subject)-[RELATIONSHIP from..until]->(object) held only in "
    "that interval and is no longer true."
)


def format_memory_block(hits: Sequence[MemoryHit]) -> str:
    """The exact block text, no trailing newline; ``""`` when there are no hits."""
    if not hits:
        return ""
    lines = [HEADER]
    lines += [f"{n}. [{hit.source}] {hit.content}" for n, hit in enumerate(hits, start=1)]
    block = "\n".join(lines)
    if any(hit.source == "graph" for hit in hits):
        block += "\n" + GRAPH_NOTE
    if any(hit.source == "graph" and hit.superseded for hit in hits):
        block += "\n" + PAST_NOTE
    return block


def last_user_index(messages: Sequence[Mapping[str, Any]]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "user":
            return index
    return None


def query_text(messages: Sequence[Mapping[str, Any]]) -> str:
    """The last user message's text: a string as is; text parts joined, then trimmed."""
    index = last_user_index(messages)
    if index is None:
        return ""
    content = messages[index].get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            part.get("text", "")
            for part in content
            if isinstance(part, Mapping) and part.get("type") == "text"
        ]
        return "".join(t for t in texts if isinstance(t, str)).strip()
    return ""


def inject_memory_block(
    messages: Sequence[Mapping[str, Any]], block: str
) -> list[dict[str, Any]] | None:
    """A new message list with ``block`` in front of the last user message's content.

    Returns ``None`` when nothing changes (no block, no user message, or a content shape
    that is neither a string nor a list of parts).
    """
    if not block:
        return None
    index = last_user_index(messages)
    if index is None:
        return None
    original = messages[index]
    content = original.get("content")
    if isinstance(content, str):
        new_content: Any = f"{block}\n\n{content}"
    elif isinstance(content, list):
        new_content = [{"type": "text", "text": f"{block}\n\n"}, *content]
    else:
        return None
    copied = [dict(m) for m in messages]
    copied[index] = {**original, "content": new_content}
    return copied
