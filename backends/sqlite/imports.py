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
from sqlalchemy import Table, select

from nams_local import export_format as f

from . import entity_keys
from . import schema as s
from .conversations import publish_vectors
from .dbapi import raw_connection
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


#: Which table each kind's ``id`` lives in, and which table each reference points at.
_OWN_TABLE = {
    "conversation": "conversations",
    "message": "messages",
    "entity": "entities",
    "relationship": "relationships",
    "reasoning_step": "steps",
    "tool_call": "tool_calls",
    "observation": "observations",
    "reflection": "reflections",
    "preference": "preferences",
    "fact": "facts",
    "trace": "traces",
    "trace_step": "trace_steps",
    "trace_tool_call": "trace_tool_calls",
}
_REFERENCES = {
    "conversation_id": "conversations",
    "entity_id": "entities",
    "source_id": "entities",
    "target_id": "entities",
    "message_id": "messages",
    "trace_id": "traces",
}
#: ``step_id`` points at a reasoning step, or (from a legacy tool call) a trace step.
_STEP_TABLE = {"tool_call": "steps", "trace_tool_call": "trace_steps"}
_CHUNK = 500


class _Batch:
    """The state of one batch's unit of work: lookups, the result, what to do after.

    Every id the batch names (its records' own and the ones they point at) is looked up
    once, up front, a few hundred per statement; the writes are fixed SQL on the DB-API
    connection (``dbapi.py``): per-record SQLAlchemy statements cost ten times the work."""

    def __init__(
        self,
        ctx: Ctx,
        header: f.ExportHeader,
        records: Sequence[f.NumberedRecord],
        embedded: Mapping[int, Vector],
    ) -> None:
        self.ctx = ctx
        self.conn = ctx.conn
        self.raw = raw_connection(ctx.conn)
        self.ws = ctx.workspace
        self.embedded = embedded
        self.use_file = file_vectors_usable(ctx, header)
        self.result = f.BatchResult()
        self.touched_conversations: set[int] = set()
        self.graph_changed = False
        self.queued: list[QueuedVector] = []
        #: ``(table, id)`` → the workspace holding it; ``pks``: → its pk, when it is ours.
        self.owner: dict[tuple[str, str], str] = {}
        self.pks: dict[tuple[str, str], int] = {}
        self.users: dict[str, str | None] = {}
        self._prefetch(records)

    def _prefetch(self, records: Sequence[f.NumberedRecord]) -> None:
        wanted: dict[str, set[str]] = {}
        for _, record in records:
            kind = record.kind
            own, own_id = _OWN_TABLE.get(kind), getattr(record, "id", None)
            if own is not None and isinstance(own_id, str):
                wanted.setdefault(own, set()).add(own_id)
            for name, table in _REFERENCES.items():
                value = getattr(record, name, None)
                if isinstance(value, str):
                    wanted.setdefault(table, set()).add(value)
            step = getattr(record, "step_id", None)
            if isinstance(step, str) and kind in _STEP_TABLE:
                wanted.setdefault(_STEP_TABLE[kind], set()).add(step)
        for table, ids in wanted.items():
            listed = sorted(ids)
            extra = ", user_id" if table == "conversations" else ""
            for start in range(0, len(listed), _CHUNK):
                chunk = listed[start : start + _CHUNK]
                marks = ", ".join("?" * len(chunk))
                rows = self.raw.execute(
                    f"SELECT id, workspace, pk{extra} FROM {table} WHERE id IN ({marks})", chunk
                ).fetchall()
                for row in rows:
                    self._known(table, row[0], row[1], int(row[2]))
                    if extra and row[1] == self.ws:
                        self.users[row[0]] = row[3]

    def _known(self, table: str, id_: str, workspace: str, pk: int) -> None:
        self.owner[(table, id_)] = workspace
        if workspace == self.ws:
            self.pks[(table, id_)] = pk

    # -- lookups ---------------------------------------------------------------------
    def new(self, line: int, kind: str, table: str, id_: str) -> bool:
        """Whether the record is new here: ``False`` when already present (counted) or
        when its id belongs to another workspace (skipped)."""
        owner = self.owner.get((table, id_))
        if owner is None:
            return True
        if owner == self.ws:
            self.result.present += 1
        else:
            self.result.skip(line, kind, f"id {id_} belongs to another workspace of this store")
        return False

    def parent(self, line: int, kind: str, table: str, id_: str, what: str) -> int | None:
        pk = self.pks.get((table, id_))
        if pk is None:
            self.result.skip(line, kind, f"{what} {id_} is in neither the file nor the store")
        return pk

    def inserted(self, table: str, id_: str, sql: str, params: Sequence[Any]) -> int:
        pk = int(self.raw.execute(sql, params).lastrowid)
        self._known(table, id_, self.ws, pk)
        return pk

    def vector(self, position: int, encoded: str | None) -> Vector | None:
        if self.use_file and encoded:
            vectors = self.ctx.vectors
            assert vectors is not None
            return f.decode_vector(encoded, vectors.embedder.dimension)
        return self.embedded.get(position)

    def _counted(self, kind: str, rowcount: int) -> None:
        if rowcount:
            self.result.add(kind)
        else:
            self.result.present += 1

    # -- kinds -----------------------------------------------------------------------
    def conversation(self, line: int, r: f.ConversationRecord) -> None:
        if not self.new(line, r.kind, "conversations", r.id):
            return
        self.inserted(
            "conversations",
            r.id,
            "INSERT INTO conversations(id, workspace, user_id, metadata, message_count, "
            "created_at, updated_at) VALUES (?, ?, ?, ?, 0, ?, ?)",
            (r.id, self.ws, r.user_id, dumps(r.metadata), r.created_at, r.updated_at),
        )
        self.users[r.id] = r.user_id
        self.result.add(r.kind)

    def message(self, line: int, r: f.MessageRecord) -> None:
        conv = self.parent(line, r.kind, "conversations", r.conversation_id, "conversation")
        if conv is None or not self.new(line, r.kind, "messages", r.id):
            return
        pk = self.inserted(
            "messages",
            r.id,
            "INSERT INTO messages(id, workspace, conversation_pk, role, content, metadata, "
            "token_count, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                r.id,
                self.ws,
                conv,
                r.role,
                r.content,
                dumps(r.metadata),
                token_count(r.content),
                r.created_at,
            ),
        )
        self.touched_conversations.add(conv)
        user_id = self.users.get(r.conversation_id)
        self.raw.execute(
            "INSERT INTO messages_fts(rowid, body, scope) VALUES (?, ?, ?)",
            (pk, r.content, message_scope(self.ws, user_id, r.conversation_id)),
        )
        if r.extraction is not None:
            x = r.extraction
            self.raw.execute(
                "INSERT INTO extraction_units(message_pk, status, attempts, last_run, error) "
                "VALUES (?, ?, ?, ?, ?)",
                (pk, x.status, x.attempts, x.last_run, x.error),
            )
        self._message_vectors(pk, r, user_id)
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
        self.raw.execute("INSERT INTO vector_queue(message_pk) VALUES (?)", (pk,))
        self.queued.append(QueuedVector(pk, r.content, part, r.conversation_id))

    def entity(self, line: int, position: int, r: f.EntityRecord) -> None:
        if not self.new(line, r.kind, "entities", r.id):
            return
        pk = self.inserted(
            "entities",
            r.id,
            "INSERT INTO entities(id, workspace, name, name_key, type, description, "
            "properties, confidence, source_stage, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                r.id,
                self.ws,
                r.name,
                name_key(r.name),
                r.type,
                r.description,
                dumps(r.properties),
                r.confidence,
                r.source_stage,
                r.created_at,
                r.updated_at,
            ),
        )
        entity_keys.claim(self.conn, pk, r.name, r.type)  # held only if no live one holds it
        self.raw.execute(
            "INSERT INTO entities_fts(rowid, body, scope) VALUES (?, ?, ?)",
            (pk, entity_text(r.name, r.description), entity_scope(self.ws, r.type)),
        )
        vector = self.vector(position, r.vector)
        if vector is not None and self.ctx.vectors is not None:
            self.ctx.vectors.entities.add(
                self.conn, [(pk, self.ws, r.type.casefold())], vector.reshape(1, -1)
            )
        if r.canonical_name is not None:
            self.raw.execute(
                "INSERT INTO entity_canonical_names(entity_pk, canonical_name) VALUES (?, ?)",
                (pk, r.canonical_name),
            )
        self.graph_changed = True
        self.result.add(r.kind)

    def user_entity(self, line: int, r: f.UserEntityRecord) -> None:
        pk = self.parent(line, r.kind, "entities", r.entity_id, "entity")
        if pk is None:
            return
        done = self.raw.execute(
            "INSERT OR IGNORE INTO user_entities(workspace, user_id, entity_pk, named) "
            "VALUES (?, ?, ?, ?)",
            (self.ws, r.user_id, pk, int(r.named)),
        )
        self._counted(r.kind, done.rowcount)

    def merge(self, line: int, r: f.MergeRecord) -> None:
        source = self.parent(line, r.kind, "entities", r.source_id, "entity")
        target = (
            None if source is None else self.parent(line, r.kind, "entities", r.target_id, "entity")
        )
        if source is None or target is None:
            return
        merged, name, type_ = self.raw.execute(
            "SELECT (SELECT merged_into_pk FROM entities WHERE pk = ?), name, type "
            "FROM entities WHERE pk = ?",
            (source, target),
        ).fetchone()
        if merged is not None:
            self.result.present += 1
            return
        self.raw.execute("UPDATE entities SET merged_into_pk = ? WHERE pk = ?", (target, source))
        entity_keys.release(self.conn, source)
        entity_keys.claim(self.conn, target, name, type_)
        self.raw.execute("DELETE FROM entities_fts WHERE rowid = ?", (source,))
        if self.ctx.vectors is not None:
            self.ctx.vectors.entities.delete(self.conn, [source])
        self.graph_changed = True
        self.result.add(r.kind)

    def feedback(self, line: int, r: f.FeedbackRecord) -> None:
        pk = self.parent(line, r.kind, "entities", r.entity_id, "entity")
        if pk is None:
            return
        confirmed = None if r.confirmed is None else int(r.confirmed)
        done = self.raw.execute(
            "UPDATE entities SET user_score = ?, confirmed = ? WHERE pk = ? "
            "AND (user_score IS NOT ? OR confirmed IS NOT ?)",
            (r.user_score, confirmed, pk, r.user_score, confirmed),
        )
        self._counted(r.kind, done.rowcount)

    def relationship(self, line: int, r: f.RelationshipRecord) -> None:
        src = self.parent(line, r.kind, "entities", r.source_id, "entity")
        dst = None if src is None else self.parent(line, r.kind, "entities", r.target_id, "entity")
        if src is None or dst is None or not self.new(line, r.kind, "relationships", r.id):
            return
        self.inserted(
            "relationships",
            r.id,
            "INSERT INTO relationships(id, workspace, source_pk, target_pk, type, properties, "
            "confidence, created_at, valid_from, valid_until, invalidated_at, superseded_by, "
            "source_message_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                r.id,
                self.ws,
                src,
                dst,
                r.type,
                dumps(r.properties),
                r.confidence,
                r.created_at,
                r.valid_from,
                r.valid_until,
                r.invalidated_at,
                r.superseded_by,
                r.source_message_id,
            ),
        )
        self.graph_changed = True
        self.result.add(r.kind)

    def mention(self, line: int, r: f.MentionRecord) -> None:
        entity = self.parent(line, r.kind, "entities", r.entity_id, "entity")
        message = (
            None
            if entity is None
            else self.parent(line, r.kind, "messages", r.message_id, "message")
        )
        if entity is None or message is None:
            return
        done = self.raw.execute(
            "INSERT OR IGNORE INTO entity_mentions(entity_pk, message_pk) VALUES (?, ?)",
            (entity, message),
        )
        self._counted(r.kind, done.rowcount)

    def row(
        self,
        line: int,
        kind: str,
        table: str,
        id_: str,
        values: dict[str, Any],
        parents: Sequence[tuple[str, str, str | None, str]] = (),
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
        columns = ["id", "workspace", *values]
        marks = ", ".join("?" * len(columns))
        self.inserted(
            table,
            id_,
            f"INSERT INTO {table}({', '.join(columns)}) VALUES ({marks})",
            (id_, self.ws, *values.values()),
        )
        self.result.add(kind)

    def session(self, line: int, r: f.SessionRecord) -> None:
        conv = self.parent(line, r.kind, "conversations", r.conversation_id, "conversation")
        if conv is None:
            return
        done = self.raw.execute(
            "INSERT OR IGNORE INTO sessions(workspace, session_id, conversation_pk) "
            "VALUES (?, ?, ?)",
            (self.ws, r.session_id, conv),
        )
        self._counted(r.kind, done.rowcount)

    def item(self, position: int, r: f.ItemRecord) -> None:
        if _item_pk(self.ctx, r) is not None:
            self.result.present += 1
            return
        vector = self.vector(position, r.vector) if r.text else None
        pk = int(
            self.raw.execute(
                "INSERT INTO store_items(workspace, ns_path, namespace, key, value, body, "
                "embedding, created_at, updated_at, ttl_minutes, expires_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    self.ws,
                    ns_path(r.namespace),
                    json.dumps(list(r.namespace)),
                    r.key,
                    json.dumps(r.value, allow_nan=False, separators=(",", ":")),
                    r.text,
                    None if vector is None else vector.astype(np.float32).tobytes(),
                    r.created_at,
                    r.updated_at,
                    r.ttl_minutes,
                    r.expires_at,
                ),
            ).lastrowid
        )
        if r.text:
            self.raw.execute(
                "INSERT INTO store_items_fts(rowid, body, scope) VALUES (?, ?, ?)",
                (pk, r.text, scope_token("w", self.ws)),
            )
        self.result.add(r.kind)

    # -- the end of the unit ---------------------------------------------------------
    def finish(self) -> None:
        if self.touched_conversations:
            listed = ", ".join(str(pk) for pk in sorted(self.touched_conversations))
            self.raw.execute(
                "UPDATE conversations SET message_count = "
                "(SELECT count(*) FROM messages WHERE conversation_pk = conversations.pk) "
                f"WHERE pk IN ({listed})"
            )
        if self.graph_changed:
            self.ctx.store.drop_graph(self.ws)
        if self.queued:
            publish_vectors(self.ctx, self.queued)


#: The kinds that are one plain row: table, references ``(column, table, field, what)``,
#: and fields stored under another column name. Other fields are columns of their name;
#: lists, objects and legacy JSON values are stored as JSON text, booleans as 0/1.
_PLAIN: dict[str, tuple[str, tuple[tuple[str, str, str, str], ...], dict[str, str]]] = {
    "reasoning_step": (
        "steps",
        (("conversation_pk", "conversations", "conversation_id", "conversation"),),
        {},
    ),
    "tool_call": ("tool_calls", (("step_pk", "steps", "step_id", "reasoning step"),), {}),
    "observation": (
        "observations",
        (("conversation_pk", "conversations", "conversation_id", "conversation"),),
        {"source_message_ids": "source_msg_ids"},
    ),
    "reflection": (
        "reflections",
        (("conversation_pk", "conversations", "conversation_id", "conversation"),),
        {"source_observation_ids": "source_obs_ids"},
    ),
    "preference": ("preferences", (), {}),
    "fact": ("facts", (), {}),
    "trace": ("traces", (), {}),
    "trace_step": ("trace_steps", (("trace_pk", "traces", "trace_id", "trace"),), {}),
    "trace_tool_call": (
        "trace_tool_calls",
        (("step_pk", "trace_steps", "step_id", "trace step"),),
        {},
    ),
}
#: Legacy tool calls keep any JSON value: ``arguments`` always as JSON text, ``result``
#: too unless there is none (``NULL``).
_JSON_VALUES = {"trace_tool_call": ("arguments", "result")}


def _plain(b: _Batch, line: int, record: Any) -> None:
    table, parents, renames = _PLAIN[record.kind]
    references = {name for _, _, name, _ in parents}
    values: dict[str, Any] = {}
    json_values = _JSON_VALUES.get(record.kind, ())
    for name, value in record.model_dump(exclude={"kind", "id", *references}).items():
        if name in json_values:
            value = None if value is None and name == "result" else dumps(value)
        elif isinstance(value, list | dict):
            value = dumps(value)
        elif isinstance(value, bool):
            value = int(value)
        values[renames.get(name, name)] = value
    links = [
        (column, ref_table, getattr(record, name), what)
        for column, ref_table, name, what in parents
    ]
    b.row(line, record.kind, table, record.id, values, links)


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
    batch = _Batch(ctx, header, records, embedded)
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
