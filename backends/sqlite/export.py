"""Reading a workspace out as export records (``nams_local.export_format``), page by page.

Each kind is one query over its table, filtered on the workspace (and with ``user_id``
on the user's conversations and what hangs off them), read in keyset pages of
``PAGE_ROWS`` by ``rowid``: memory stays constant however large the store, and every page
is an index range scan that starts where the last one ended (no ``OFFSET``). Kinds come
in ``KIND_ORDER``, so parents precede children. The caller supplies ``read(fn)``, which
runs ``fn(connection)`` — for a file, every page on one read connection inside one
transaction, so the export is one consistent snapshot even while others write (WAL).

What ``--user`` exports (the user's memory, decided here and in docs/export-format.md):
their conversations with messages, mentions, steps, tool calls of those steps,
observations, reflections and legacy sessions; the entities their messages mention,
their user entity, the entities merged into those, and the relationships between two of
those entities. Workspace-wide records nobody owns (legacy preferences, facts, traces,
key/value items, tool calls without a step) are left out.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel
from sqlalchemy import Connection, text

from nams_local import export_format as f

from .passages import MAX_PASSAGES, STRIDE
from .store import VectorState

__all__ = ["PAGE_ROWS", "Reader", "iter_records"]

#: Rows read per page (and the most rows held at once).
PAGE_ROWS = 1000

T = TypeVar("T")
#: Runs ``fn(connection)`` where the export reads (its snapshot).
Reader = Callable[[Callable[[Connection], T]], T]

_USER_CONVS = "SELECT pk FROM conversations WHERE workspace = :ws AND user_id = :user"
_USER_MSGS = f"SELECT pk FROM messages WHERE conversation_pk IN ({_USER_CONVS})"
_USER_ENTITIES_0 = (
    f"SELECT entity_pk FROM entity_mentions WHERE message_pk IN ({_USER_MSGS}) "
    "UNION SELECT entity_pk FROM user_entities WHERE workspace = :ws AND user_id = :user"
)
_USER_ENTITIES = (
    f"SELECT entity_pk FROM ({_USER_ENTITIES_0}) UNION SELECT pk FROM entities "
    f"WHERE workspace = :ws AND merged_into_pk IN ({_USER_ENTITIES_0})"
)

#: Per kind: the page query (``{user}`` is replaced by the user filter or nothing) and
#: the user filter. Every query selects ``rowid AS k`` first and takes ``:after``/``:n``.
_QUERIES: dict[str, tuple[str, str]] = {
    "conversation": (
        "SELECT c.rowid AS k, c.id, c.user_id, c.metadata, c.created_at, c.updated_at "
        "FROM conversations c WHERE c.workspace = :ws AND c.rowid > :after {user} "
        "ORDER BY c.rowid LIMIT :n",
        "AND c.user_id = :user",
    ),
    "message": (
        "SELECT m.rowid AS k, m.id, c.id AS conversation_id, m.role, m.content, m.metadata, "
        "m.created_at, x.status, x.attempts, x.last_run, x.error "
        "FROM messages m JOIN conversations c ON c.pk = m.conversation_pk "
        "LEFT JOIN extraction_units x ON x.message_pk = m.pk "
        "WHERE m.workspace = :ws AND m.rowid > :after {user} ORDER BY m.rowid LIMIT :n",
        "AND c.user_id = :user",
    ),
    "entity": (
        "SELECT e.rowid AS k, e.id, e.name, e.type, e.description, e.properties, "
        "e.confidence, e.source_stage, n.canonical_name, e.created_at, e.updated_at "
        "FROM entities e LEFT JOIN entity_canonical_names n ON n.entity_pk = e.pk "
        "WHERE e.workspace = :ws AND e.rowid > :after {user} ORDER BY e.rowid LIMIT :n",
        f"AND e.pk IN ({_USER_ENTITIES})",
    ),
    "user_entity": (
        "SELECT u.rowid AS k, u.user_id, e.id AS entity_id, u.named FROM user_entities u "
        "JOIN entities e ON e.pk = u.entity_pk "
        "WHERE u.workspace = :ws AND u.rowid > :after {user} ORDER BY u.rowid LIMIT :n",
        "AND u.user_id = :user",
    ),
    "merge": (
        "SELECT e.rowid AS k, e.id AS source_id, t.id AS target_id FROM entities e "
        "JOIN entities t ON t.pk = e.merged_into_pk "
        "WHERE e.workspace = :ws AND e.rowid > :after {user} ORDER BY e.rowid LIMIT :n",
        f"AND e.pk IN ({_USER_ENTITIES})",
    ),
    "feedback": (
        "SELECT e.rowid AS k, e.id AS entity_id, e.user_score, e.confirmed FROM entities e "
        "WHERE e.workspace = :ws AND e.rowid > :after "
        "AND (e.user_score IS NOT NULL OR e.confirmed IS NOT NULL) {user} "
        "ORDER BY e.rowid LIMIT :n",
        f"AND e.pk IN ({_USER_ENTITIES})",
    ),
    "relationship": (
        "SELECT r.rowid AS k, r.id, a.id AS source_id, b.id AS target_id, r.type, "
        "r.properties, r.confidence, r.created_at, r.valid_from, r.valid_until, "
        "r.invalidated_at, r.superseded_by, r.source_message_id FROM relationships r "
        "JOIN entities a ON a.pk = r.source_pk JOIN entities b ON b.pk = r.target_pk "
        "WHERE r.workspace = :ws AND r.rowid > :after {user} ORDER BY r.rowid LIMIT :n",
        f"AND r.source_pk IN ({_USER_ENTITIES}) AND r.target_pk IN ({_USER_ENTITIES})",
    ),
    "mention": (
        "SELECT em.rowid AS k, e.id AS entity_id, m.id AS message_id FROM entity_mentions em "
        "JOIN entities e ON e.pk = em.entity_pk JOIN messages m ON m.pk = em.message_pk "
        "WHERE m.workspace = :ws AND em.rowid > :after {user} ORDER BY em.rowid LIMIT :n",
        f"AND em.message_pk IN ({_USER_MSGS})",
    ),
    "reasoning_step": (
        "SELECT st.rowid AS k, st.id, c.id AS conversation_id, st.reasoning, "
        "st.action_taken, st.result, st.created_at FROM steps st "
        "JOIN conversations c ON c.pk = st.conversation_pk "
        "WHERE st.workspace = :ws AND st.rowid > :after {user} ORDER BY st.rowid LIMIT :n",
        "AND c.user_id = :user",
    ),
    "tool_call": (
        "SELECT t.rowid AS k, t.id, st.id AS step_id, t.tool_name, t.input, t.output, "
        "t.status, t.duration_ms, t.created_at FROM tool_calls t "
        "LEFT JOIN steps st ON st.pk = t.step_pk "
        "WHERE t.workspace = :ws AND t.rowid > :after {user} ORDER BY t.rowid LIMIT :n",
        f"AND st.conversation_pk IN ({_USER_CONVS})",
    ),
    "observation": (
        "SELECT o.rowid AS k, o.id, c.id AS conversation_id, o.content, "
        "o.source_msg_ids AS source_message_ids, "
        "o.created_at FROM observations o JOIN conversations c ON c.pk = o.conversation_pk "
        "WHERE o.workspace = :ws AND o.rowid > :after {user} ORDER BY o.rowid LIMIT :n",
        "AND c.user_id = :user",
    ),
    "reflection": (
        "SELECT r.rowid AS k, r.id, c.id AS conversation_id, r.content, "
        "r.source_obs_ids AS source_observation_ids, "
        "r.superseded_by_id, r.created_at FROM reflections r "
        "JOIN conversations c ON c.pk = r.conversation_pk "
        "WHERE r.workspace = :ws AND r.rowid > :after {user} ORDER BY r.rowid LIMIT :n",
        "AND c.user_id = :user",
    ),
    "session": (
        "SELECT s.rowid AS k, s.session_id, c.id AS conversation_id FROM sessions s "
        "JOIN conversations c ON c.pk = s.conversation_pk "
        "WHERE s.workspace = :ws AND s.rowid > :after {user} ORDER BY s.rowid LIMIT :n",
        "AND c.user_id = :user",
    ),
    "preference": (
        "SELECT rowid AS k, id, category, preference, context, created_at FROM preferences "
        "WHERE workspace = :ws AND rowid > :after {user} ORDER BY rowid LIMIT :n",
        "AND 0",
    ),
    "fact": (
        "SELECT rowid AS k, id, subject, predicate, object, created_at FROM facts "
        "WHERE workspace = :ws AND rowid > :after {user} ORDER BY rowid LIMIT :n",
        "AND 0",
    ),
    "trace": (
        "SELECT rowid AS k, id, session_id, task, outcome, success, started_at, completed_at "
        "FROM traces WHERE workspace = :ws AND rowid > :after {user} ORDER BY rowid LIMIT :n",
        "AND 0",
    ),
    "trace_step": (
        "SELECT s.rowid AS k, s.id, t.id AS trace_id, s.step_number, s.thought, s.action, "
        "s.observation, s.created_at FROM trace_steps s JOIN traces t ON t.pk = s.trace_pk "
        "WHERE s.workspace = :ws AND s.rowid > :after {user} ORDER BY s.rowid LIMIT :n",
        "AND 0",
    ),
    "trace_tool_call": (
        "SELECT c.rowid AS k, c.id, s.id AS step_id, c.tool_name, c.arguments, c.result, "
        "c.status, c.duration_ms, c.error, c.created_at FROM trace_tool_calls c "
        "JOIN trace_steps s ON s.pk = c.step_pk "
        "WHERE c.workspace = :ws AND c.rowid > :after {user} ORDER BY c.rowid LIMIT :n",
        "AND 0",
    ),
    "item": (
        "SELECT rowid AS k, namespace, key, value, body, embedding, created_at, updated_at, "
        "ttl_minutes, expires_at FROM store_items "
        "WHERE workspace = :ws AND rowid > :after {user} ORDER BY rowid LIMIT :n",
        "AND 0",
    ),
}


def _rows(
    read: Reader[list[Any]], kind: str, workspace: str, user_id: str | None
) -> Iterator[list[Any]]:
    """Pages of ``kind``'s rows, in rowid order."""
    query, user_filter = _QUERIES[kind]
    sql = text(query.format(user=user_filter if user_id is not None else ""))
    after = 0
    while True:
        params = {"ws": workspace, "user": user_id, "after": after, "n": PAGE_ROWS}

        def page(conn: Connection, params: dict[str, Any] = params) -> list[Any]:
            return list(conn.execute(sql, params).all())

        rows = read(page)
        if not rows:
            return
        yield rows
        after = int(rows[-1].k)
        if len(rows) < PAGE_ROWS:
            return


def _vectors_of(
    read: Reader[dict[int, bytes]], index: Any, keys: Sequence[int]
) -> dict[int, bytes]:
    def fetch(conn: Connection) -> dict[int, bytes]:
        found: dict[int, bytes] = index.get(conn, keys)
        return found

    return read(fetch)


def iter_records(
    read: Reader[Any],
    workspace: str,
    *,
    user_id: str | None = None,
    vectors: VectorState | None = None,
) -> Iterator[BaseModel]:
    """Every record of the workspace (``user_id``: that user's memory), kinds in order,
    then the ``end`` record. ``vectors`` adds the stored vectors (``--with-vectors``)."""
    count = 0
    for kind in f.KIND_ORDER[:-1]:
        for rows in _rows(read, kind, workspace, user_id):
            for record in _records(kind, rows, read, vectors):
                count += 1
                yield record
    yield f.EndRecord(kind="end", records=count)


def _records(
    kind: str, rows: list[Any], read: Reader[Any], vectors: VectorState | None
) -> Iterator[BaseModel]:
    if kind == "message":
        yield from _messages(rows, read, vectors)
    elif kind == "entity":
        yield from _entities(rows, read, vectors)
    elif kind == "item":
        yield from (_item(row, vectors) for row in rows)
    else:
        yield from (_simple(kind, row) for row in rows)


def _messages(rows: list[Any], read: Reader[Any], vectors: VectorState | None) -> Iterator[Any]:
    stored: dict[int, bytes] = {}
    if vectors is not None:
        keys = [int(r.k) + j * STRIDE for r in rows for j in range(1 + MAX_PASSAGES)]
        stored = _vectors_of(read, vectors.messages, keys)
    for row in rows:
        found = None
        if vectors is not None:
            found = []
            for j in range(1 + MAX_PASSAGES):
                blob = stored.get(int(row.k) + j * STRIDE)
                if blob is None:
                    break
                found.append(f.encode_vector(blob))
        values = _values("message", row)
        state = {name: values.pop(name) for name in ("status", "attempts", "last_run", "error")}
        extraction = None if state["status"] is None else f.ExtractionState(**state)
        yield f.MessageRecord(**values, extraction=extraction, vectors=found or None)


def _entities(rows: list[Any], read: Reader[Any], vectors: VectorState | None) -> Iterator[Any]:
    stored: dict[int, bytes] = {}
    if vectors is not None:
        stored = _vectors_of(read, vectors.entities, [int(r.k) for r in rows])
    for row in rows:
        blob = stored.get(int(row.k))
        vector = None if blob is None else f.encode_vector(blob)
        yield f.EntityRecord(**_values("entity", row), vector=vector)


def _item(row: Any, vectors: VectorState | None) -> f.ItemRecord:
    blob = row.embedding if vectors is not None else None
    return f.ItemRecord(
        kind="item",
        namespace=json.loads(row.namespace),
        key=row.key,
        value=json.loads(row.value),
        text=row.body,
        created_at=row.created_at,
        updated_at=row.updated_at,
        ttl_minutes=row.ttl_minutes,
        expires_at=row.expires_at,
        vector=None if blob is None else f.encode_vector(bytes(blob)),
    )


#: The models of the kinds whose rows are their records field for field (the queries
#: name their columns after the fields; integer flags become booleans on validation).
_SIMPLE: dict[str, type[BaseModel]] = {
    "conversation": f.ConversationRecord,
    "user_entity": f.UserEntityRecord,
    "merge": f.MergeRecord,
    "feedback": f.FeedbackRecord,
    "relationship": f.RelationshipRecord,
    "mention": f.MentionRecord,
    "reasoning_step": f.ReasoningStepRecord,
    "tool_call": f.ToolCallRecord,
    "observation": f.ObservationRecord,
    "reflection": f.ReflectionRecord,
    "session": f.SessionRecord,
    "preference": f.PreferenceRecord,
    "fact": f.FactRecord,
    "trace": f.TraceRecord,
    "trace_step": f.TraceStepRecord,
    "trace_tool_call": f.TraceToolCallRecord,
}
#: Columns stored as JSON text (``NULL`` stays ``None``); a legacy tool call's
#: ``arguments`` and ``result`` too (a reasoning step's ``result`` is plain text).
_JSON_COLUMNS = frozenset(
    {"metadata", "properties", "source_message_ids", "source_observation_ids"}
)
_LEGACY_JSON = frozenset({"arguments", "result"})


def _values(kind: str, row: Any) -> dict[str, Any]:
    """The row as record fields: ``kind`` added, JSON columns decoded, the key dropped."""
    values = {name: value for name, value in row._mapping.items() if name != "k"}
    decoded = _JSON_COLUMNS | (_LEGACY_JSON if kind == "trace_tool_call" else frozenset())
    for name in decoded & values.keys():
        if values[name] is not None:
            values[name] = json.loads(values[name])
    return {"kind": kind, **values}


def _simple(kind: str, row: Any) -> BaseModel:
    return _SIMPLE[kind].model_validate(_values(kind, row))
