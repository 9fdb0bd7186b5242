"""Writing export records into the engine as they are: the fidelity path of ``import``.

One batch is one unit of work (one transaction: all of it or none). Ids, times,
validity, extraction state and merges are kept; the derived state the engine keeps beside
its rows is rebuilt exactly as its own writes build it: full-text entries, entity
resolution keys (``entity_keys``), message counts, vectors (given ones when the file's
embedder is the store's, else queued for the vector lane or embedded by the caller before
the unit). A record whose id is already in the workspace is left as it is (``present``):
importing a file twice changes nothing. One that cannot be placed (its parent is in
neither the file nor the store, its id belongs to another workspace) is skipped with
the reason. The graph mirror is dropped after a batch that touched the graph; it reloads.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from sqlalchemy import Table, insert, select, text, update

from nams_local import export_format as f

from . import entity_keys
from . import schema as s
from .conversations import publish_vectors
from .items import ns_path
from .passages import MAX_PASSAGES
from .rows import dumps, name_key, token_count
from .store import Ctx, entity_text, message_partition
from .text import entity_scope, message_scope, scope_token
from .vector_lane import QueuedVector
from .vectors import Vector

__all__ = ["file_vectors_usable", "needs_embedding", "write_batch"]


def file_vectors_usable(ctx: Ctx, header: f.ExportHeader) -> bool:
    """The file's vectors fit this store: same embedder, same dimension."""
    v = ctx.vectors
    return (
        v is not None
        and header.with_vectors
        and header.embedder == v.embedder.name
        and header.dimension == v.embedder.dimension
    )


def needs_embedding(
    ctx: Ctx, header: f.ExportHeader, records: Sequence[f.NumberedRecord]
) -> list[tuple[int, str]]:
    """``(position, text)`` of the entities and items of the batch that are new to the
    store and have no usable vector in the file: what the caller embeds before the write
    (a read, so a second import embeds nothing)."""
    if ctx.vectors is None:
        return []
    use_file = file_vectors_usable(ctx, header)
    wanted: list[tuple[int, str]] = []
    for n, (_, record) in enumerate(records):
        if isinstance(record, f.EntityRecord):
            if (use_file and record.vector) or _find(ctx, s.entities, record.id) is not None:
                continue
            wanted.append((n, entity_text(record.name, record.description)))
        elif isinstance(record, f.ItemRecord) and record.text:
            if (use_file and record.vector) or _item_pk(ctx, record) is not None:
                continue
            wanted.append((n, record.text))
    return wanted


def _find(ctx: Ctx, table: Table, id_: str) -> Any:
    """The row with this id in any workspace (ids are unique across the store)."""
    return ctx.conn.execute(select(table).where(table.c.id == id_)).first()


def _item_pk(ctx: Ctx, record: f.ItemRecord) -> int | None:
    t = s.store_items
    pk = ctx.conn.execute(
        select(t.c.pk).where(
            t.c.workspace == ctx.workspace,
            t.c.ns_path == ns_path(record.namespace),
            t.c.key == record.key,
        )
    ).scalar()
    return None if pk is None else int(pk)


class _Batch:
    """The state of one batch's unit of work: lookups, the result, what to do after."""

    def __init__(
        self,
        ctx: Ctx,
        header: f.ExportHeader,
        embedded: Mapping[int, Vector],
    ) -> None:
        self.ctx = ctx
        self.conn = ctx.conn
        self.ws = ctx.workspace
        self.embedded = embedded
        self.use_file = file_vectors_usable(ctx, header)
        self.result = f.BatchResult()
        self.touched_conversations: set[int] = set()
        self.graph_changed = False
        self.queued: list[QueuedVector] = []

    # -- lookups ---------------------------------------------------------------------
    def pk(self, table: Table, id_: str | None) -> int | None:
        """The pk of ``id_`` in this workspace (``None``: not here)."""
        if id_ is None:
            return None
        found = self.conn.execute(
            select(table.c.pk).where(table.c.id == id_, table.c.workspace == self.ws)
        ).scalar()
        return None if found is None else int(found)

    def new(self, line: int, kind: str, table: Table, id_: str) -> bool:
        """Whether the record is new here: ``False`` when already present (counted) or
        when its id belongs to another workspace (skipped)."""
        row = self.conn.execute(select(table.c.workspace).where(table.c.id == id_)).first()
        if row is None:
            return True
        if row.workspace == self.ws:
            self.result.present += 1
        else:
            self.result.skip(line, kind, f"id {id_} belongs to another workspace of this store")
        return False

    def parent(self, line: int, kind: str, table: Table, id_: str, what: str) -> int | None:
        pk = self.pk(table, id_)
        if pk is None:
            self.result.skip(line, kind, f"{what} {id_} is in neither the file nor the store")
        return pk

    def vector(self, position: int, encoded: str | None) -> Vector | None:
        if self.use_file and encoded:
            vectors = self.ctx.vectors
            assert vectors is not None
            return f.decode_vector(encoded, vectors.embedder.dimension)
        return self.embedded.get(position)

    # -- kinds -----------------------------------------------------------------------
    def conversation(self, line: int, r: f.ConversationRecord) -> None:
        if not self.new(line, r.kind, s.conversations, r.id):
            return
        self.conn.execute(
            insert(s.conversations).values(
                id=r.id,
                workspace=self.ws,
                user_id=r.user_id,
                metadata=dumps(r.metadata),
                message_count=0,
                created_at=r.created_at,
                updated_at=r.updated_at,
            )
        )
        self.result.add(r.kind)

    def message(self, line: int, r: f.MessageRecord) -> None:
        conv = self.conn.execute(
            select(s.conversations.c.pk, s.conversations.c.user_id).where(
                s.conversations.c.id == r.conversation_id,
                s.conversations.c.workspace == self.ws,
            )
        ).first()
        if conv is None:
            self.result.skip(
                line,
                r.kind,
                f"conversation {r.conversation_id} is in neither the file nor the store",
            )
            return
        if not self.new(line, r.kind, s.messages, r.id):
            return
        pk = int(
            self.conn.execute(
                insert(s.messages)
                .returning(s.messages.c.pk)
                .values(
                    id=r.id,
                    workspace=self.ws,
                    conversation_pk=conv.pk,
                    role=r.role,
                    content=r.content,
                    metadata=dumps(r.metadata),
                    token_count=token_count(r.content),
                    created_at=r.created_at,
                )
            ).scalar_one()
        )
        self.touched_conversations.add(int(conv.pk))
        self.conn.execute(
            text("INSERT INTO messages_fts(rowid, body, scope) VALUES (:pk, :body, :scope)"),
            {
                "pk": pk,
                "body": r.content,
                "scope": message_scope(self.ws, conv.user_id, r.conversation_id),
            },
        )
        if r.extraction is not None:
            x = r.extraction
            self.conn.execute(
                insert(s.extraction_units).values(
                    message_pk=pk,
                    status=x.status,
                    attempts=x.attempts,
                    last_run=x.last_run,
                    error=x.error,
                )
            )
        self._message_vectors(pk, r, conv.user_id)
        self.result.add(r.kind)

    def _message_vectors(self, pk: int, r: f.MessageRecord, user_id: str | None) -> None:
        vectors = self.ctx.vectors
        if vectors is None:
            return
        part = message_partition(self.ws, user_id)
        if self.use_file and r.vectors:
            dim = vectors.embedder.dimension
            wide = np.zeros((1, (1 + MAX_PASSAGES) * dim), dtype=np.float32)
            for j, encoded in enumerate(r.vectors[: 1 + MAX_PASSAGES]):
                wide[0, j * dim : (j + 1) * dim] = f.decode_vector(encoded, dim)
            vectors.messages.add(self.conn, [(pk, part, r.conversation_id)], wide)
            return
        self.conn.execute(insert(s.vector_queue).values(message_pk=pk))
        self.queued.append(QueuedVector(pk, r.content, part, r.conversation_id))

    def entity(self, line: int, position: int, r: f.EntityRecord) -> None:
        if not self.new(line, r.kind, s.entities, r.id):
            return
        values = {
            "id": r.id,
            "workspace": self.ws,
            "name": r.name,
            "name_key": name_key(r.name),
            "type": r.type,
            "description": r.description,
            "properties": dumps(r.properties),
            "confidence": r.confidence,
            "source_stage": r.source_stage,
            "created_at": r.created_at,
            "updated_at": r.updated_at,
        }
        pk = entity_keys.insert_unresolved(self.conn, values)
        self.conn.execute(
            text("INSERT INTO entities_fts(rowid, body, scope) VALUES (:pk, :body, :scope)"),
            {
                "pk": pk,
                "body": entity_text(r.name, r.description),
                "scope": entity_scope(self.ws, r.type),
            },
        )
        vector = self.vector(position, r.vector)
        if vector is not None and self.ctx.vectors is not None:
            self.ctx.vectors.entities.add(
                self.conn, [(pk, self.ws, r.type.casefold())], vector.reshape(1, -1)
            )
        if r.canonical_name is not None:
            self.conn.execute(
                insert(s.entity_canonical_names).values(
                    entity_pk=pk, canonical_name=r.canonical_name
                )
            )
        self.graph_changed = True
        self.result.add(r.kind)

    def user_entity(self, line: int, r: f.UserEntityRecord) -> None:
        pk = self.parent(line, r.kind, s.entities, r.entity_id, "entity")
        if pk is None:
            return
        done = self.conn.execute(
            text(
                "INSERT OR IGNORE INTO user_entities(workspace, user_id, entity_pk, named) "
                "VALUES (:ws, :user, :pk, :named)"
            ),
            {"ws": self.ws, "user": r.user_id, "pk": pk, "named": int(r.named)},
        )
        self._counted(r.kind, done.rowcount)

    def _counted(self, kind: str, rowcount: int) -> None:
        if rowcount:
            self.result.add(kind)
        else:
            self.result.present += 1

    def merge(self, line: int, r: f.MergeRecord) -> None:
        e = s.entities
        rows = {
            row.id: row
            for row in self.conn.execute(
                select(e.c.pk, e.c.id, e.c.name, e.c.type, e.c.merged_into_pk).where(
                    e.c.id.in_([r.source_id, r.target_id]), e.c.workspace == self.ws
                )
            )
        }
        source, target = rows.get(r.source_id), rows.get(r.target_id)
        if source is None or target is None:
            missing = r.source_id if source is None else r.target_id
            self.result.skip(line, r.kind, f"entity {missing} is in neither the file nor the store")
            return
        if source.merged_into_pk is not None:
            self.result.present += 1
            return
        self.conn.execute(update(e).where(e.c.pk == source.pk).values(merged_into_pk=target.pk))
        entity_keys.release(self.conn, source.pk)
        entity_keys.claim(self.conn, target.pk, target.name, target.type)
        self.conn.execute(text("DELETE FROM entities_fts WHERE rowid = :pk"), {"pk": source.pk})
        if self.ctx.vectors is not None:
            self.ctx.vectors.entities.delete(self.conn, [source.pk])
        self.graph_changed = True
        self.result.add(r.kind)

    def feedback(self, line: int, r: f.FeedbackRecord) -> None:
        e = s.entities
        row = self.conn.execute(
            select(e.c.pk, e.c.user_score, e.c.confirmed).where(
                e.c.id == r.entity_id, e.c.workspace == self.ws
            )
        ).first()
        if row is None:
            self.result.skip(
                line, r.kind, f"entity {r.entity_id} is in neither the file nor the store"
            )
            return
        confirmed = None if r.confirmed is None else int(r.confirmed)
        if row.user_score == r.user_score and row.confirmed == confirmed:
            self.result.present += 1
            return
        self.conn.execute(
            update(e).where(e.c.pk == row.pk).values(user_score=r.user_score, confirmed=confirmed)
        )
        self.result.add(r.kind)

    def relationship(self, line: int, r: f.RelationshipRecord) -> None:
        src = self.parent(line, r.kind, s.entities, r.source_id, "entity")
        dst = None if src is None else self.parent(line, r.kind, s.entities, r.target_id, "entity")
        if src is None or dst is None or not self.new(line, r.kind, s.relationships, r.id):
            return
        self.conn.execute(
            insert(s.relationships).values(
                id=r.id,
                workspace=self.ws,
                source_pk=src,
                target_pk=dst,
                type=r.type,
                properties=dumps(r.properties),
                confidence=r.confidence,
                created_at=r.created_at,
                valid_from=r.valid_from,
                valid_until=r.valid_until,
                invalidated_at=r.invalidated_at,
                superseded_by=r.superseded_by,
                source_message_id=r.source_message_id,
            )
        )
        self.graph_changed = True
        self.result.add(r.kind)

    def mention(self, line: int, r: f.MentionRecord) -> None:
        entity = self.parent(line, r.kind, s.entities, r.entity_id, "entity")
        message = (
            None
            if entity is None
            else self.parent(line, r.kind, s.messages, r.message_id, "message")
        )
        if entity is None or message is None:
            return
        done = self.conn.execute(
            text("INSERT OR IGNORE INTO entity_mentions(entity_pk, message_pk) VALUES (:e, :m)"),
            {"e": entity, "m": message},
        )
        self._counted(r.kind, done.rowcount)

    def row(
        self,
        line: int,
        kind: str,
        table: Table,
        id_: str,
        values: dict[str, Any],
        parents: Sequence[tuple[str, Table, str | None, str]] = (),
    ) -> None:
        """Insert a plain row whose references are ``(column, table, id, what)``
        (a ``None`` id is a ``NULL`` reference)."""
        for column, parent_table, parent_id, what in parents:
            if parent_id is None:
                values[column] = None
                continue
            pk = self.parent(line, kind, parent_table, parent_id, what)
            if pk is None:
                return
            values[column] = pk
        if not self.new(line, kind, table, id_):
            return
        self.conn.execute(insert(table).values(id=id_, workspace=self.ws, **values))
        self.result.add(kind)

    def session(self, line: int, r: f.SessionRecord) -> None:
        conv = self.parent(line, r.kind, s.conversations, r.conversation_id, "conversation")
        if conv is None:
            return
        done = self.conn.execute(
            text(
                "INSERT OR IGNORE INTO sessions(workspace, session_id, conversation_pk) "
                "VALUES (:ws, :sid, :conv)"
            ),
            {"ws": self.ws, "sid": r.session_id, "conv": conv},
        )
        self._counted(r.kind, done.rowcount)

    def item(self, position: int, r: f.ItemRecord) -> None:
        if _item_pk(self.ctx, r) is not None:
            self.result.present += 1
            return
        vector = self.vector(position, r.vector) if r.text else None
        t = s.store_items
        pk = int(
            self.conn.execute(
                insert(t)
                .returning(t.c.pk)
                .values(
                    workspace=self.ws,
                    ns_path=ns_path(r.namespace),
                    namespace=json.dumps(list(r.namespace)),
                    key=r.key,
                    value=json.dumps(r.value, allow_nan=False, separators=(",", ":")),
                    body=r.text,
                    embedding=None if vector is None else vector.astype(np.float32).tobytes(),
                    created_at=r.created_at,
                    updated_at=r.updated_at,
                    ttl_minutes=r.ttl_minutes,
                    expires_at=r.expires_at,
                )
            ).scalar_one()
        )
        if r.text:
            self.conn.execute(
                text("INSERT INTO store_items_fts(rowid, body, scope) VALUES (:pk, :body, :scope)"),
                {"pk": pk, "body": r.text, "scope": scope_token("w", self.ws)},
            )
        self.result.add(r.kind)

    # -- the end of the unit ---------------------------------------------------------
    def finish(self) -> None:
        if self.touched_conversations:
            self.conn.execute(
                text(
                    "UPDATE conversations SET message_count = "
                    "(SELECT count(*) FROM messages WHERE conversation_pk = conversations.pk) "
                    f"WHERE pk IN ({', '.join(str(pk) for pk in self.touched_conversations)})"
                )
            )
        if self.graph_changed:
            self.ctx.store.drop_graph(self.ws)
        if self.queued:
            publish_vectors(self.ctx, self.queued)


def _plain(b: _Batch, line: int, record: Any) -> None:
    """The kinds that are one plain row with references."""
    r = record
    if isinstance(r, f.ReasoningStepRecord):
        b.row(
            line,
            r.kind,
            s.steps,
            r.id,
            {
                "reasoning": r.reasoning,
                "action_taken": r.action_taken,
                "result": r.result,
                "created_at": r.created_at,
            },
            [("conversation_pk", s.conversations, r.conversation_id, "conversation")],
        )
    elif isinstance(r, f.ToolCallRecord):
        b.row(
            line,
            r.kind,
            s.tool_calls,
            r.id,
            {
                "tool_name": r.tool_name,
                "input": r.input,
                "output": r.output,
                "status": r.status,
                "duration_ms": r.duration_ms,
                "created_at": r.created_at,
            },
            [("step_pk", s.steps, r.step_id, "reasoning step")],
        )
    elif isinstance(r, f.ObservationRecord):
        b.row(
            line,
            r.kind,
            s.observations,
            r.id,
            {
                "content": r.content,
                "source_msg_ids": dumps(r.source_message_ids),
                "created_at": r.created_at,
            },
            [("conversation_pk", s.conversations, r.conversation_id, "conversation")],
        )
    elif isinstance(r, f.ReflectionRecord):
        b.row(
            line,
            r.kind,
            s.reflections,
            r.id,
            {
                "content": r.content,
                "source_obs_ids": dumps(r.source_observation_ids),
                "superseded_by_id": r.superseded_by_id,
                "created_at": r.created_at,
            },
            [("conversation_pk", s.conversations, r.conversation_id, "conversation")],
        )
    elif isinstance(r, f.PreferenceRecord):
        b.row(
            line,
            r.kind,
            s.preferences,
            r.id,
            {
                "category": r.category,
                "preference": r.preference,
                "context": r.context,
                "created_at": r.created_at,
            },
        )
    elif isinstance(r, f.FactRecord):
        b.row(
            line,
            r.kind,
            s.facts,
            r.id,
            {
                "subject": r.subject,
                "predicate": r.predicate,
                "object": r.object,
                "created_at": r.created_at,
            },
        )
    elif isinstance(r, f.TraceRecord):
        b.row(
            line,
            r.kind,
            s.traces,
            r.id,
            {
                "session_id": r.session_id,
                "task": r.task,
                "outcome": r.outcome,
                "success": None if r.success is None else int(r.success),
                "started_at": r.started_at,
                "completed_at": r.completed_at,
            },
        )
    elif isinstance(r, f.TraceStepRecord):
        b.row(
            line,
            r.kind,
            s.trace_steps,
            r.id,
            {
                "step_number": r.step_number,
                "thought": r.thought,
                "action": r.action,
                "observation": r.observation,
                "created_at": r.created_at,
            },
            [("trace_pk", s.traces, r.trace_id, "trace")],
        )
    elif isinstance(r, f.TraceToolCallRecord):
        b.row(
            line,
            r.kind,
            s.trace_tool_calls,
            r.id,
            {
                "tool_name": r.tool_name,
                "arguments": dumps(r.arguments),
                "result": None if r.result is None else dumps(r.result),
                "status": r.status,
                "duration_ms": r.duration_ms,
                "error": r.error,
                "created_at": r.created_at,
            },
            [("step_pk", s.trace_steps, r.step_id, "trace step")],
        )


_DISPATCH: dict[type[Any], Callable[[_Batch, int, int, Any], None]] = {
    f.ConversationRecord: lambda b, line, n, r: b.conversation(line, r),
    f.MessageRecord: lambda b, line, n, r: b.message(line, r),
    f.EntityRecord: lambda b, line, n, r: b.entity(line, n, r),
    f.UserEntityRecord: lambda b, line, n, r: b.user_entity(line, r),
    f.MergeRecord: lambda b, line, n, r: b.merge(line, r),
    f.FeedbackRecord: lambda b, line, n, r: b.feedback(line, r),
    f.RelationshipRecord: lambda b, line, n, r: b.relationship(line, r),
    f.MentionRecord: lambda b, line, n, r: b.mention(line, r),
    f.SessionRecord: lambda b, line, n, r: b.session(line, r),
    f.ItemRecord: lambda b, line, n, r: b.item(n, r),
}


def write_batch(
    ctx: Ctx,
    header: f.ExportHeader,
    records: Sequence[f.NumberedRecord],
    embedded: Mapping[int, Vector],
) -> f.BatchResult:
    """Write one batch (unit of work): every record new to the workspace, in order;
    ``embedded`` holds the vectors the caller computed, by position in ``records``."""
    batch = _Batch(ctx, header, embedded)
    for n, (line, record) in enumerate(records):
        if isinstance(record, f.EndRecord):
            continue
        write = _DISPATCH.get(type(record))
        if write is None:
            _plain(batch, line, record)
        else:
            write(batch, line, n, record)
    batch.finish()
    return batch.result
