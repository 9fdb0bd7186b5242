"""Asking the target whether a write whose answer was lost did land (the crash window).

The checkpoint is written after the target acknowledges a write; a sync killed between
the two, or a write whose answer was a failure although it was applied, leaves one write
unconfirmed. Hosted NAMS has no idempotency keys and no client-chosen ids, and a marker in
the target's metadata would make the target differ from the source, so instead each kind
is looked up by its content among the target's records that no checkpoint entry claims
yet. Every lookup reads through the ``MemoryBackend`` protocol (so it works against hosted
NAMS and any other backend) and is bounded by the list routes' limits.

What "the same" means, per kind:

- conversation: same user and metadata, no messages yet (messages are only sent once the
  conversation's creation is recorded), not mapped; the newest such one.
- message batch (all or nothing on every backend): the target conversation's newest
  messages end with the batch's (role, content) sequence, preceded by the message before
  the batch. Only content that repeats itself exactly, batch after batch, could fool it.
- entity: same name and type (hosted and local resolution reuse such an entity anyway).
- step: same reasoning, action and result in the target conversation, not mapped.
- tool call: same step, tool, input, output and status, not mapped.
- relationship: an edge of the same type between the same (mapped) entities, not mapped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..backend import MAX_LIST_LIMIT, MemoryBackend
from ..models import Conversation, Message, ReasoningStep, ToolCall

if TYPE_CHECKING:
    from ..models import GraphEdge

__all__ = [
    "find_conversation",
    "find_entity",
    "find_relationship",
    "find_step",
    "find_tool_call",
    "messages_landed",
]


async def find_conversation(
    target: MemoryBackend, source: Conversation, metadata: object, claimed: set[str]
) -> str | None:
    for candidate in await target.list_conversations(source.user_id, limit=MAX_LIST_LIMIT):
        if candidate.id in claimed or candidate.user_id != source.user_id:
            continue
        if dict(candidate.metadata) != (metadata or {}):
            continue
        if candidate.message_count not in (None, 0):
            continue
        if not await target.list_messages(candidate.id, limit=1):
            return candidate.id
    return None


async def messages_landed(
    target: MemoryBackend,
    target_conversation: str,
    before: Message | None,
    batch: Sequence[Message],
) -> bool:
    want = [(m.role, m.content) for m in batch]
    if before is not None:
        want.insert(0, (before.role, before.content))
    newest = await target.list_messages(target_conversation, limit=min(MAX_LIST_LIMIT, len(want)))
    have = [(m.role, m.content) for m in reversed(newest)]
    return have == want


async def find_entity(target: MemoryBackend, name: str, type: str) -> str | None:
    wanted = " ".join(name.split()).casefold()
    for entity in await target.list_entities(type=type):
        if " ".join(entity.name.split()).casefold() == wanted and entity.type == type:
            return entity.id
    return None


def _same_step(a: ReasoningStep, b: ReasoningStep) -> bool:
    return (a.reasoning, a.action_taken, a.result or None) == (
        b.reasoning,
        b.action_taken,
        b.result or None,
    )


async def find_step(
    target: MemoryBackend, target_conversation: str, source: ReasoningStep, claimed: set[str]
) -> str | None:
    for step in await target.list_steps(target_conversation):
        if step.id not in claimed and _same_step(step, source):
            return step.id
    return None


async def find_tool_call(
    target: MemoryBackend,
    target_conversation: str,
    target_step: str | None,
    source: ToolCall,
    claimed: set[str],
) -> str | None:
    trace = await target.get_trace(target_conversation)
    for call in trace.tool_calls:
        if call.id in claimed or call.step_id != target_step:
            continue
        if (call.tool_name, call.input or None, call.output or None, call.status) == (
            source.tool_name,
            source.input or None,
            source.output or None,
            source.status,
        ):
            return call.id
    return None


async def find_relationship(
    target: MemoryBackend,
    source_entity: str,
    target_entity: str,
    edge: GraphEdge,
    claimed: set[str],
) -> str | None:
    details = await target.get_entity(source_entity)
    for rel in details.relationships:
        if rel.id is None or rel.id in claimed or rel.direction == "incoming":
            continue
        if rel.type == edge.type and rel.target_id == target_entity:
            return rel.id
    return None
