"""Conversations and messages: writes, newest-first lists and scoped search.

Synchronous functions of a ``Ctx``; ``SQLiteBackend`` runs each on the store's worker
thread inside one transaction, so a failure anywhere writes nothing. Vectors arrive
already computed (``Vectors``): the backend embeds on another thread first, so a long
batch being embedded never holds up other calls' statements.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row, delete, insert, select, text, update

from nams_local.errors import NotSupportedError
from nams_local.models import (
    Conversation,
    ConversationSearchHits,
    Message,
    NewMessage,
    ReasoningStep,
    SearchMode,
    SearchResult,
)

from . import schema as s
from .rows import dumps, insert_rows, new_id, now, to_conversation, to_message, to_step, token_count
from .search import Ranked, bm25, rank
from .store import Ctx, message_partition
from .text import match_query, message_scope, scope_token, terms
from .vector_lane import QueuedVector
from .vectors import Vector, Vectors

__all__ = [
    "EXTRACTED_ROLES",
    "add_messages",
    "conversation_row",
    "create_conversation",
    "delete_conversation",
    "get_conversation",
    "list_conversations",
    "list_messages",
    "search_messages",
    "search_user_messages",
    "unindex_messages",
]

c, m = s.conversations, s.messages

#: Messages of these roles are extracted and summarised; others (system, tool) are not.
EXTRACTED_ROLES = ("user", "assistant")


def conversation_row(ctx: Ctx, conversation_id: str) -> Row[Any]:
    """The conversation's row in this workspace, or ``NotFoundError``."""
    return ctx.row(c, conversation_id, "conversation")


def create_conversation(
    ctx: Ctx, user_id: str | None, metadata: dict[str, str] | None
) -> Conversation:
    stamp = now()
    values = {
        "id": new_id(),
        "workspace": ctx.workspace,
        "user_id": user_id,
        "metadata": dumps(metadata or {}),
        "message_count": 0,
        "created_at": stamp,
        "updated_at": stamp,
    }
    insert_rows(ctx.conn, c, [values])
    return get_conversation(ctx, str(values["id"]))


def get_conversation(ctx: Ctx, conversation_id: str) -> Conversation:
    return to_conversation(conversation_row(ctx, conversation_id), ctx.workspace)


def list_conversations(ctx: Ctx, user_id: str | None, limit: int) -> list[Conversation]:
    stmt = select(c).where(c.c.workspace == ctx.workspace)
    if user_id is not None:
        stmt = stmt.where(c.c.user_id == user_id)
    stmt = stmt.order_by(c.c.updated_at.desc(), c.c.pk.desc()).limit(limit)
    return [to_conversation(row, ctx.workspace) for row in ctx.conn.execute(stmt).all()]


def delete_conversation(ctx: Ctx, conversation_id: str) -> None:
    row = conversation_row(ctx, conversation_id)
    pks = [pk for (pk,) in ctx.conn.execute(select(m.c.pk).where(m.c.conversation_pk == row.pk))]
    unindex_messages(ctx, pks)
    ctx.conn.execute(delete(c).where(c.c.pk == row.pk))


def unindex_messages(ctx: Ctx, pks: Sequence[int]) -> None:
    """Drop the messages' full-text and vector entries (their rows stay)."""
    if not pks:
        return
    ctx.conn.execute(text("DELETE FROM messages_fts WHERE rowid = :pk"), [{"pk": pk} for pk in pks])
    if ctx.vectors is not None:
        ctx.vectors.messages.delete(ctx.conn, pks)


def add_messages(
    ctx: Ctx,
    conversation_id: str,
    messages: Sequence[NewMessage],
    embedded: Vectors | None,
    extract: bool = False,
) -> list[Message]:
    """Write messages (already validated) with their text and vector index entries.

    ``embedded`` ``None`` (with embeddings on) leaves the vectors to the store's vector
    lane, which embeds them in batches once this write has committed.
    ``extract`` queues user and assistant messages for extraction (a ``pending`` unit
    each, in the same transaction, so no message is ever stored without its unit).
    """
    conv = conversation_row(ctx, conversation_id)
    vectors = ctx.vectors
    stamp = now()
    rows = [
        {
            "id": new_id(),
            "workspace": ctx.workspace,
            "conversation_pk": conv.pk,
            "role": msg.role,
            "content": msg.content,
            "metadata": dumps(msg.metadata or {}),
            "token_count": token_count(msg.content),
            "created_at": stamp,
        }
        for msg in messages
    ]
    conn = ctx.conn
    pks = insert_rows(conn, m, rows)
    scope = message_scope(ctx.workspace, conv.user_id, conv.id)
    conn.execute(
        text("INSERT INTO messages_fts(rowid, body, scope) VALUES (:pk, :body, :scope)"),
        [
            {"pk": pk, "body": row["content"], "scope": scope}
            for pk, row in zip(pks, rows, strict=True)
        ],
    )
    units = [
        {"message_pk": pk, "status": "pending", "attempts": 0}
        for pk, row in zip(pks, rows, strict=True)
        if extract and row["role"] in EXTRACTED_ROLES
    ]
    if units:
        conn.execute(insert(s.extraction_units), units)
    if vectors is not None:
        part = message_partition(ctx.workspace, conv.user_id)
        if embedded is not None:
            vectors.messages.add(conn, [(pk, part, conv.id) for pk in pks], embedded)
        else:
            _queue_vectors(
                ctx,
                [
                    QueuedVector(pk, row["content"], part, conv.id)
                    for pk, row in zip(pks, rows, strict=True)
                ],
            )
    conn.execute(
        update(c)
        .where(c.c.pk == conv.pk)
        .values(message_count=c.c.message_count + len(rows), updated_at=stamp)
    )
    result = conn.execute(select(m).where(m.c.pk.in_(pks)).order_by(m.c.pk)).all()
    return [to_message(row, conv.id) for row in result]


def _queue_vectors(ctx: Ctx, items: list[QueuedVector]) -> None:
    """Leave the rows to the vector lane: a durable queue row each now, the lane's
    in-memory queue once this transaction has committed."""
    lane = ctx.store.vector_lane
    assert lane is not None
    ctx.conn.execute(insert(s.vector_queue), [{"message_pk": item.pk} for item in items])
    ctx.store.after_commit(lambda: lane.enqueue(items))


def list_messages(ctx: Ctx, conversation_id: str, limit: int) -> list[Message]:
    conv = conversation_row(ctx, conversation_id)
    rows = ctx.conn.execute(
        select(m).where(m.c.conversation_pk == conv.pk).order_by(m.c.pk.desc()).limit(limit)
    ).all()
    return [to_message(row, conv.id) for row in rows]


def resolve_mode(has_vectors: bool, mode: SearchMode | None) -> SearchMode:
    """The mode a search runs in: hybrid by default with embeddings, else text."""
    if not has_vectors:
        if mode in ("vector", "hybrid"):
            raise NotSupportedError(
                f"{mode} search needs embeddings; this store was opened with embeddings off"
            )
        return "text"
    return mode or "hybrid"


def _rank_in(
    ctx: Ctx,
    conv: Row[Any],
    query: str,
    query_vector: Vector | None,
    limit: int,
    mode: SearchMode,
    weight: float,
) -> list[Ranked]:
    """The best ``limit`` message pks (with scores) of one conversation."""
    conn = ctx.conn
    vectors = ctx.vectors
    match = match_query(query, scope_token("c", conv.id))
    words = len(terms(query))

    def text_search(k: int) -> list[tuple[int, float]]:
        return bm25(conn, "messages_fts", match, k, words)

    vector_search = None
    if vectors is not None and query_vector is not None:
        part = message_partition(ctx.workspace, conv.user_id)

        def vector_search(k: int) -> list[tuple[int, float]]:
            assert vectors is not None and query_vector is not None
            return vectors.messages.search(conn, query_vector, k, part, conv.id)

    return rank(mode, limit, text_search, vector_search, weight)


def _materialise(ctx: Ctx, ranked: dict[int, list[Ranked]]) -> dict[int, list[Message]]:
    """Messages for ranked pks of several conversations (keyed by conversation pk), in one
    query, in rank order."""
    pks = [r.pk for hits in ranked.values() for r in hits]
    if not pks:
        return {conv_pk: [] for conv_pk in ranked}
    rows = {
        row.pk: row
        for row in ctx.conn.execute(
            select(m, c.c.id.label("conv_id"))
            .join(c, c.c.pk == m.c.conversation_pk)
            .where(m.c.pk.in_(pks))
        ).all()
    }
    return {
        conv_pk: [
            to_message(rows[r.pk], rows[r.pk].conv_id, r.score)
            for r in hits
            if r.pk in rows and rows[r.pk].conversation_pk == conv_pk
        ]
        for conv_pk, hits in ranked.items()
    }


def search_messages(
    ctx: Ctx,
    conversation_id: str,
    query: str,
    query_vector: Vector | None,
    limit: int,
    mode: SearchMode,
    weight: float,
) -> SearchResult[Message]:
    conv = conversation_row(ctx, conversation_id)
    ranked = {conv.pk: _rank_in(ctx, conv, query, query_vector, limit, mode, weight)}
    return SearchResult[Message](items=_materialise(ctx, ranked)[conv.pk], search_type=mode)


def search_user_messages(
    ctx: Ctx,
    user_id: str,
    query: str,
    query_vector: Vector | None,
    conversation_limit: int,
    per_conversation_limit: int,
    exclude_conversation_id: str | None,
    include_steps: bool,
    weight: float,
) -> list[ConversationSearchHits]:
    """Per-conversation searches for one user, in one transaction (same hits as one by one)."""
    run_mode = resolve_mode(ctx.vectors is not None, None)
    convs = ctx.conn.execute(
        select(c)
        .where(c.c.workspace == ctx.workspace, c.c.user_id == user_id)
        .order_by(c.c.updated_at.desc(), c.c.pk.desc())
        .limit(conversation_limit + 1)
    ).all()
    convs = [conv for conv in convs if conv.id != exclude_conversation_id][:conversation_limit]
    ranked = {
        conv.pk: _rank_in(ctx, conv, query, query_vector, per_conversation_limit, run_mode, weight)
        for conv in convs
    }
    messages = _materialise(ctx, ranked)
    steps: dict[int, list[ReasoningStep]] = {conv.pk: [] for conv in convs}
    if include_steps and convs:
        st = s.steps
        by_pk = {conv.pk: conv.id for conv in convs}
        for row in ctx.conn.execute(
            select(st).where(st.c.conversation_pk.in_(list(by_pk))).order_by(st.c.pk)
        ).all():
            steps[row.conversation_pk].append(to_step(row, by_pk[row.conversation_pk]))
    groups = [
        ConversationSearchHits(
            conversation_id=conv.id,
            messages=messages[conv.pk],
            steps=steps[conv.pk],
            search_type=run_mode,
        )
        for conv in convs
    ]
    return groups
