"""Replaying one backend's workspace into another, resumably (``nams-local sync``).

Both ends are ``MemoryBackend``s, so the same replay pushes a local workspace to hosted
NAMS (``--to``) and pulls a hosted workspace into the local engine (``--from``). The order
is the one the records depend on: entities (so relationships and the target's own
extraction find them), then each conversation oldest first with its messages oldest
first in batches, its reasoning steps and their tool calls, then relationships.
A source with ``SupportsPagedReads`` (the local engine) is read in full, page by page; any
other (hosted NAMS) through the list routes, whose 200 bound is reported.

Every write goes through ``Replay._write``: the checkpoint names it before it is sent and
records its result once acknowledged, so a resumed sync skips what is recorded and asks
the target (``reconcile``) about the one write that may have landed unrecorded.

Sync is incremental and append-only: running it again sends what the source gained since
(new records, new messages at the end of a conversation); edits and deletions on the
source are not propagated.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import Protocol, TypeVar, runtime_checkable

from ..backend import (
    MAX_BULK_MESSAGES,
    MAX_LIST_LIMIT,
    MAX_PAGE_LIMIT,
    Capabilities,
    MemoryBackend,
    SupportsPagedReads,
)
from ..errors import InvalidInputError, NotFoundError
from ..models import (
    Conversation,
    Entity,
    GraphEdge,
    Message,
    NewMessage,
    ReasoningStep,
    ToolCall,
)
from . import reconcile
from .checkpoint import Checkpoint, Pending
from .pacing import Pacing, send_paced
from .report import SyncReport

__all__ = ["MAX_BATCH_BYTES", "Replay"]

T = TypeVar("T")

#: Content bytes in one message batch at most: well under a server's body bound (1 MiB by
#: default on ``nams-local serve``), whatever the batch's count.
MAX_BATCH_BYTES = 256 * 1024


@runtime_checkable
class _Probing(Protocol):
    """A backend that learns what its server can do by asking (the hosted client)."""

    async def probe_capabilities(self) -> Capabilities: ...


@runtime_checkable
class _MetadataAware(Protocol):
    """A backend that may drop message metadata (the hosted client, toward hosted NAMS)."""

    @property
    def keeps_message_metadata(self) -> bool: ...


class Replay:
    def __init__(
        self,
        source: MemoryBackend,
        target: MemoryBackend,
        checkpoint: Checkpoint,
        *,
        batch_size: int = MAX_BULK_MESSAGES,
        pacing: Pacing | None = None,
        report: SyncReport | None = None,
    ) -> None:
        if not 1 <= batch_size <= MAX_BULK_MESSAGES:
            raise InvalidInputError(f"batch size must be from 1 to {MAX_BULK_MESSAGES}")
        self.source = source
        self.target = target
        self.checkpoint = checkpoint
        self.batch_size = batch_size
        self.pacing = pacing or Pacing()
        self.report = report or SyncReport()
        self._caps = Capabilities()
        self._metadata = True

    async def run(self) -> SyncReport:
        target = self.target
        self._caps = (
            await target.probe_capabilities()
            if isinstance(target, _Probing)
            else target.capabilities
        )
        self._metadata = (
            target.keeps_message_metadata if isinstance(target, _MetadataAware) else True
        )
        for entity in await self.source.list_entities():
            await self._entity(entity)
        source = self.source
        if isinstance(source, SupportsPagedReads):
            async for conversation in _all_conversations(source):
                await self._conversation(conversation)
        else:
            await self._newest_conversations()
        await self._relationships()
        return self.report

    async def _newest_conversations(self) -> None:
        """A source read through the list routes only (hosted NAMS): its newest 200
        conversations, the rest counted as not carried."""
        conversations = await self.source.list_conversations(limit=MAX_LIST_LIMIT)
        if len(conversations) >= MAX_LIST_LIMIT:
            self.report.cannot_hold(
                "conversations beyond the newest 200 (not readable)",
                1,
                f"the list route returns at most {MAX_LIST_LIMIT}; counted as 1, the rest "
                "is unknown",
            )
        for conversation in reversed(conversations):
            await self._conversation(conversation)

    # -- the one way a record is written -------------------------------------------------
    async def _write(
        self,
        pending: Pending,
        send: Callable[[], Awaitable[T]],
        lookup: Callable[[], Awaitable[T | None]],
    ) -> T | None:
        """``send()``'s result, or the target's copy when a previous or failed attempt
        landed; None when the target refuses the record (reported, and remembered so a
        resume does not try it again)."""
        before = self.checkpoint.pending
        if before is not None and before.to_json() == pending.to_json():
            found = await lookup()
            if found is not None:
                self.report.adopted[pending.kind] += pending.count or 1
                return found
        self.checkpoint.begin(pending)
        try:
            result, adopted = await send_paced(send, lookup, self.pacing, self._waited)
        except (InvalidInputError, NotFoundError) as exc:
            where = f"{pending.kind} {pending.key}"
            self.checkpoint.refuse(where, exc.message)
            self.report.refused[where] = exc.message
            return None
        if adopted:
            self.report.adopted[pending.kind] += pending.count or 1
        else:
            self.report.sent[pending.kind] += pending.count or 1
        return result

    async def _write_record(
        self,
        kind: str,
        source_id: str,
        send: Callable[[], Awaitable[str]],
        lookup: Callable[[], Awaitable[str | None]],
    ) -> str | None:
        """``_write`` for a record that gets an id of its own, recorded in the id map."""
        made = await self._write(Pending(kind, source_id), send, lookup)
        if made is not None:
            self.checkpoint.record(kind, source_id, made)
        return made

    def _waited(self, _seconds: float) -> None:
        self.report.waits += 1

    def _seen(self, kind: str, source_id: str) -> str | None:
        """The target id already recorded for ``source_id``, counted as skipped."""
        found = self.checkpoint.target_id(kind, source_id)
        if found is not None or f"{kind} {source_id}" in self.checkpoint.refused:
            self.report.skipped[kind] += 1
        return found

    # -- entities ------------------------------------------------------------------------
    async def _entity(self, entity: Entity) -> None:
        if self._seen("entity", entity.id) or f"entity {entity.id}" in self.checkpoint.refused:
            return

        async def send() -> str:
            made = await self.target.add_entity(
                entity.name, entity.type, entity.description, dict(entity.properties) or None
            )
            return made.id

        async def lookup() -> str | None:
            return await reconcile.find_entity(self.target, entity.name, entity.type)

        await self._write_record("entity", entity.id, send, lookup)

    # -- conversations -------------------------------------------------------------------
    async def _conversation(self, conversation: Conversation) -> None:
        if f"conversation {conversation.id}" in self.checkpoint.refused:
            self.report.skipped["conversation"] += 1
            return
        target_id = self._seen("conversation", conversation.id)
        if target_id is None:
            target_id = await self._create_conversation(conversation)
            if target_id is None:
                self.report.cannot_hold(
                    "messages (their conversation was refused)",
                    conversation.message_count or 0,
                    "the target refused the conversation",
                )
                return
        await self._messages(conversation, target_id)
        await self._steps(conversation.id, target_id)
        await self._summaries(conversation.id)

    async def _create_conversation(self, conversation: Conversation) -> str | None:
        metadata = dict(conversation.metadata)
        if not self._metadata and any(not isinstance(v, str) for v in metadata.values()):
            # Hosted NAMS declares string values only: numbers, booleans and null go as text.
            self.report.cannot_hold(
                "conversation metadata values (sent as text)",
                sum(1 for v in metadata.values() if not isinstance(v, str)),
                "the target's conversation metadata holds strings only",
            )
            metadata = {k: v if isinstance(v, str) else json.dumps(v) for k, v in metadata.items()}
        claimed = self.checkpoint.mapped_targets("conversation")

        async def send() -> str:
            made = await self.target.create_conversation(conversation.user_id, metadata or None)
            return made.id

        async def lookup() -> str | None:
            return await reconcile.find_conversation(self.target, conversation, metadata, claimed)

        return await self._write_record("conversation", conversation.id, send, lookup)

    async def _messages(self, conversation: Conversation, target_id: str) -> None:
        source = self.source
        if isinstance(source, SupportsPagedReads):
            await self._all_messages(source, conversation, target_id)
            return
        listed = list(reversed(await self.source.list_messages(conversation.id, MAX_LIST_LIMIT)))
        total = max(conversation.message_count or 0, len(listed))
        offset = total - len(listed)  # older messages the list route cannot reach
        sent = self.checkpoint.messages.get(conversation.id, 0)
        self.report.skipped["message"] += min(sent, total)
        if offset > sent:
            self.report.cannot_hold(
                "messages older than a conversation's newest 200 (not readable)",
                offset - sent,
                f"the list route returns a conversation's newest {MAX_LIST_LIMIT} only",
            )
        start = await self._settle_batch(
            conversation.id, target_id, listed, offset, max(sent, offset)
        )
        await self._send_from(conversation.id, target_id, listed, offset, start)

    async def _all_messages(
        self, source: SupportsPagedReads, conversation: Conversation, target_id: str
    ) -> None:
        """Every message of the conversation past the checkpoint's count, read page by
        page (bounded memory, however long the conversation). Each page begins with the
        message before its first unsent one, so each batch's predecessor is at hand for
        the crash-window lookup; the batch in doubt is settled on the first page."""
        sent = self.checkpoint.messages.get(conversation.id, 0)
        self.report.skipped["message"] += sent
        size = (MAX_PAGE_LIMIT - 1) // self.batch_size * self.batch_size + 1
        first = True
        async for offset, page in _message_pages(source, conversation.id, sent, size):
            if first:
                start = await self._settle_batch(conversation.id, target_id, page, offset, sent)
                first = False
            else:
                start = offset + 1
            await self._send_from(conversation.id, target_id, page, offset, start)

    async def _send_from(
        self,
        conversation_id: str,
        target_id: str,
        listed: Sequence[Message],
        offset: int,
        start: int,
    ) -> None:
        """Send ``listed[start - offset:]`` (``listed[0]`` is message ``offset`` of the
        conversation) in batches, reporting what of it the target cannot hold."""
        with_metadata = sum(1 for m in listed[start - offset :] if m.metadata)
        if not self._metadata:
            self.report.cannot_hold(
                "message metadata", with_metadata, "the target does not store message metadata"
            )
        self.report.cannot_hold(
            "message times",
            offset + len(listed) - start,
            "the target stamps a message when it arrives; the order is kept",
        )
        for batch_start, batch in _batches(listed, offset, start, self.batch_size):
            before = listed[batch_start - offset - 1] if batch_start > offset else None
            await self._send_batch(conversation_id, target_id, batch_start, batch, before)

    async def _settle_batch(
        self,
        conversation_id: str,
        target_id: str,
        listed: Sequence[Message],
        offset: int,
        start: int,
    ) -> int:
        """Where sending resumes: after the batch in doubt if it landed. It is settled
        before batching anew because this run may cut batches differently (another
        ``--batch-size``, messages added since), so no batch of its own would match it."""
        pending = self.checkpoint.pending
        if pending is None or (pending.kind, pending.key, pending.start) != (
            "message",
            conversation_id,
            start,
        ):
            return start
        batch = listed[start - offset : start - offset + pending.count]
        before = listed[start - offset - 1] if start > offset else None
        if len(batch) != pending.count or not await reconcile.messages_landed(
            self.target, target_id, before, batch
        ):
            return start
        self.report.adopted["message"] += pending.count
        self.checkpoint.record_messages(conversation_id, start + pending.count)
        return start + pending.count

    async def _send_batch(
        self,
        conversation_id: str,
        target_id: str,
        start: int,
        batch: Sequence[Message],
        before: Message | None,
    ) -> None:
        outgoing = [
            NewMessage(
                role=m.role,
                content=m.content,
                metadata=dict(m.metadata) if self._metadata and m.metadata else None,
            )
            for m in batch
        ]

        async def send() -> bool:
            await self.target.add_messages(target_id, outgoing)
            return True

        async def lookup() -> bool | None:
            return await reconcile.messages_landed(self.target, target_id, before, batch) or None

        pending = Pending("message", conversation_id, start, len(batch))
        if await self._write(pending, send, lookup) is not None:
            self.checkpoint.record_messages(conversation_id, start + len(batch))

    async def _steps(self, source_conversation: str, target_conversation: str) -> None:
        steps = await self.source.list_steps(source_conversation)
        if not steps:
            return
        trace = await self.source.get_trace(source_conversation)
        calls: defaultdict[str | None, list[ToolCall]] = defaultdict(list)
        for call in trace.tool_calls:
            calls[call.step_id].append(call)
        for step in steps:
            target_step = self._seen("step", step.id) or await self._step(step, target_conversation)
            if target_step is None:
                self.report.cannot_hold(
                    "tool calls (their step was refused)",
                    len(calls.get(step.id, [])),
                    "the target refused the step",
                )
                continue
            for call in calls.get(step.id, []):
                if not self._seen("tool_call", call.id):
                    await self._tool_call(call, target_step, target_conversation)

    async def _step(self, step: ReasoningStep, target_conversation: str) -> str | None:
        claimed = self.checkpoint.mapped_targets("step")

        async def send() -> str:
            made = await self.target.record_step(
                target_conversation, step.reasoning, step.action_taken, step.result
            )
            return made.id

        async def lookup() -> str | None:
            return await reconcile.find_step(self.target, target_conversation, step, claimed)

        return await self._write_record("step", step.id, send, lookup)

    async def _tool_call(self, call: ToolCall, target_step: str, target_conversation: str) -> None:
        claimed = self.checkpoint.mapped_targets("tool_call")

        async def send() -> str:
            made = await self.target.record_tool_call(
                call.tool_name,
                call.input or "",
                call.output,
                call.status,
                step_id=target_step,
                duration_ms=call.duration_ms,
            )
            return made.id

        async def lookup() -> str | None:
            return await reconcile.find_tool_call(
                self.target, target_conversation, target_step, call, claimed
            )

        await self._write_record("tool_call", call.id, send, lookup)

    async def _summaries(self, conversation_id: str) -> None:
        """Observations and reflections have no write route: counted, never sent."""
        observations = await self.source.list_observations(conversation_id, MAX_LIST_LIMIT)
        reflections = await self.source.list_reflections(conversation_id)
        reason = "no write route; the target summarises the messages it receives itself"
        self.report.cannot_hold("observations", len(observations), reason)
        self.report.cannot_hold("reflections", len(reflections), reason)

    # -- relationships -------------------------------------------------------------------
    async def _relationships(self) -> None:
        graph = await self.source.get_graph()
        todo = [e for e in graph.edges if not self._seen("relationship", e.id)]
        todo = [e for e in todo if f"relationship {e.id}" not in self.checkpoint.refused]
        if not self._caps.relationship_writes:
            self.report.cannot_hold(
                "relationships", len(todo), "the target has no relationship write route"
            )
            return
        if not self._caps.relationship_validity:
            self.report.cannot_hold(
                "relationship validity",
                sum(1 for e in todo if e.valid_from or e.valid_until),
                "the target does not store when a relationship held",
            )
        for edge in todo:
            await self._relationship(edge)

    async def _relationship(self, edge: GraphEdge) -> None:
        source = self.checkpoint.target_id("entity", edge.source)
        target = self.checkpoint.target_id("entity", edge.target)
        if source is None or target is None:
            self.report.cannot_hold(
                "relationships (an end was refused)", 1, "an end entity was not carried"
            )
            return
        claimed = self.checkpoint.mapped_targets("relationship")

        async def send() -> str:
            made = await self.target.add_relationship(
                source,
                target,
                edge.type,
                dict(edge.properties) or None,
                edge.confidence,
                valid_from=edge.valid_from,
                valid_until=edge.valid_until,
                supersede=False,
            )
            return made.id

        async def lookup() -> str | None:
            return await reconcile.find_relationship(self.target, source, target, edge, claimed)

        await self._write_record("relationship", edge.id, send, lookup)


async def _all_conversations(source: SupportsPagedReads) -> AsyncIterator[Conversation]:
    """Every conversation of the source in creation order, a page at a time."""
    after: str | None = None
    while page := await source.conversations_page(after, MAX_PAGE_LIMIT):
        for conversation in page:
            yield conversation
        after = page[-1].id


async def _message_pages(
    source: SupportsPagedReads, conversation_id: str, sent: int, size: int
) -> AsyncIterator[tuple[int, list[Message]]]:
    """``(offset, page)``: the conversation's messages from index ``sent - 1`` on (or
    0), ``size`` at most per page, each page starting with the last message of the one
    before; ``offset`` is the index of the page's first message. Keyset-paged: only the
    first page skips (to the checkpoint's count)."""
    offset = max(sent - 1, 0)
    page = await source.messages_page(conversation_id, limit=size, skip=offset)
    while page:
        yield offset, page
        if len(page) < size:
            return
        offset += len(page) - 1
        more = await source.messages_page(conversation_id, page[-1].id, size - 1)
        if not more:
            return
        page = [page[-1], *more]


def _batches(
    listed: Sequence[Message], offset: int, start: int, size: int
) -> Iterator[tuple[int, list[Message]]]:
    """``listed[start - offset:]`` in batches of ``size`` messages and ``MAX_BATCH_BYTES``
    of content at most, each with its index in the whole conversation."""
    batch: list[Message] = []
    batch_start = start
    used = 0
    for index in range(start, offset + len(listed)):
        message = listed[index - offset]
        weight = len(message.content.encode())
        if batch and (len(batch) >= size or used + weight > MAX_BATCH_BYTES):
            yield batch_start, batch
            batch, batch_start, used = [], index, 0
        batch.append(message)
        used += weight
    if batch:
        yield batch_start, batch
