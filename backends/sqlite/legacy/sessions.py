"""Sessions: conversations addressed by a free-form name, messages in insertion order.

The legacy API names a conversation by any string (``"user-42"``, a UUID, ...). A session
is looked up by that name first, then as a conversation id, and created on first write with
a deterministic id (a UUIDv5 of workspace and name), so reading an unknown session can name
the id it *will* have without creating anything. Messages are the engine's own rows (same
table, text index and counts as ``/v1``); this module adds what the legacy API promises on
top: insertion order, strictly increasing timestamps within a conversation, single-message
deletes and a workspace-wide search with a 0–1 threshold (``overlap``).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Row, delete, func, insert, select, update

from nams_local.errors import NotFoundError
from nams_local.models import Message, NewMessage

from .. import conversations, deferred_fts
from .. import schema as s
from ..rows import dumps, loads, new_id, now, to_message, when
from ..search import bm25
from ..store import Ctx
from ..text import match_query, scope_token
from ..vectors import Vectors
from .models import SessionInfo, SessionTranscript
from .overlap import rank_by_overlap

__all__ = [
    "add_session_messages",
    "clear_session",
    "create_conversation",
    "delete_message",
    "find_session",
    "get_session",
    "list_session_conversations",
    "list_sessions",
    "search_session_messages",
    "session_conversation_id",
]

c, m, ss = s.conversations, s.messages, s.sessions

#: Namespace of the deterministic conversation ids of named sessions.
SESSION_NAMESPACE = uuid.UUID("8f0c2f5e-5a3e-4f43-9d55-2b7f1f3c6a10")

#: FTS candidates fetched per requested search result before word-overlap scoring.
_CANDIDATES_PER_RESULT = 20
_MIN_CANDIDATES = 200


def session_conversation_id(workspace: str, session_id: str) -> str:
    """The id the conversation of a new session gets (stable; distinct per workspace)."""
    return str(uuid.uuid5(SESSION_NAMESPACE, f"{workspace}\x1f{session_id}"))


def find_session(ctx: Ctx, session_id: str) -> Row[Any] | None:
    """The session's conversation row: by session name first, then by conversation id."""
    named = ctx.conn.execute(
        select(c)
        .join(ss, ss.c.conversation_pk == c.c.pk)
        .where(ss.c.workspace == ctx.workspace, ss.c.session_id == session_id)
    ).first()
    if named is not None:
        return named
    return ctx.conn.execute(
        select(c).where(c.c.workspace == ctx.workspace, c.c.id == session_id)
    ).first()


def _session_names(ctx: Ctx, conv_pks: Sequence[int]) -> dict[int, str]:
    rows = ctx.conn.execute(
        select(ss.c.conversation_pk, ss.c.session_id).where(ss.c.conversation_pk.in_(conv_pks))
    ).all()
    return {int(pk): str(name) for pk, name in rows}


def _insert_conversation(
    ctx: Ctx, conv_id: str, user_id: str | None, metadata: dict[str, Any] | None
) -> Any:
    stamp = now()
    ctx.conn.execute(
        insert(c).values(
            id=conv_id,
            workspace=ctx.workspace,
            user_id=user_id,
            metadata=dumps(metadata or {}),
            message_count=0,
            created_at=stamp,
            updated_at=stamp,
        )
    )
    return conversations.conversation_row(ctx, conv_id)


def _open_session(ctx: Ctx, session_id: str) -> Any:
    found = find_session(ctx, session_id)
    if found is not None:
        return found
    conv = _insert_conversation(ctx, session_conversation_id(ctx.workspace, session_id), None, None)
    ctx.conn.execute(
        insert(ss).values(workspace=ctx.workspace, session_id=session_id, conversation_pk=conv.pk)
    )
    return conv


def create_conversation(
    ctx: Ctx, user_id: str | None, metadata: dict[str, Any] | None
) -> SessionTranscript:
    """A new conversation (random id) whose session name is its id; any JSON metadata."""
    conv = _insert_conversation(ctx, new_id(), user_id, metadata)
    return _transcript(ctx, conv, conv.id, [])


def _increasing_stamps(ctx: Ctx, conv_pk: int, first_pk: int, count: int) -> list[str]:
    """``count`` strictly increasing UTC times, later than the conversation's earlier
    messages (the clock may stand still or step back between two fast inserts)."""
    last = ctx.conn.execute(
        select(func.max(m.c.created_at)).where(m.c.conversation_pk == conv_pk, m.c.pk < first_pk)
    ).scalar()
    start = datetime.now(UTC)
    if last is not None:
        start = max(start, datetime.fromisoformat(last) + timedelta(microseconds=1))
    return [
        (start + timedelta(microseconds=i)).isoformat(timespec="microseconds") for i in range(count)
    ]


def add_session_messages(
    ctx: Ctx,
    session_id: str,
    messages: Sequence[NewMessage],
    embedded: Vectors | None,
    *,
    create: bool = True,
) -> list[Message]:
    """Append messages to a session (created when new and ``create``), in input order.

    Content and metadata are stored as given: empty content and any JSON metadata are
    legacy-valid, so the caller validates only roles.
    """
    conv = _open_session(ctx, session_id) if create else find_session(ctx, session_id)
    if conv is None:
        raise NotFoundError(f"conversation {session_id!r} not found")
    if not messages:
        return []
    stored = conversations.add_messages(ctx, conv.id, messages, embedded)
    pks = [
        int(pk)
        for (pk,) in ctx.conn.execute(
            select(m.c.pk).where(m.c.id.in_([msg.id for msg in stored])).order_by(m.c.pk)
        )
    ]
    stamps = _increasing_stamps(ctx, conv.pk, pks[0], len(pks))
    for pk, stamp in zip(pks, stamps, strict=True):
        ctx.conn.execute(update(m).where(m.c.pk == pk).values(created_at=stamp))
    ctx.conn.execute(update(c).where(c.c.pk == conv.pk).values(updated_at=stamps[-1]))
    return [
        msg.model_copy(update={"created_at": when(stamp)})
        for msg, stamp in zip(stored, stamps, strict=True)
    ]


def _messages_of(ctx: Ctx, conv: Row[Any], limit: int | None) -> list[Message]:
    stmt = select(m).where(m.c.conversation_pk == conv.pk).order_by(m.c.pk)
    if limit is not None:
        stmt = stmt.limit(limit)
    return [to_message(row, conv.id) for row in ctx.conn.execute(stmt).all()]


def _transcript(
    ctx: Ctx, conv: Row[Any], session_id: str, messages: list[Message]
) -> SessionTranscript:
    return SessionTranscript(
        session_id=session_id,
        conversation_id=conv.id,
        exists=True,
        user_id=conv.user_id,
        metadata=loads(conv.metadata),
        messages=messages,
        created_at=datetime.fromisoformat(conv.created_at),
        updated_at=when(conv.updated_at),
    )


def get_session(
    ctx: Ctx, session_id: str, limit: int | None, *, with_messages: bool = True
) -> SessionTranscript:
    """The session's oldest ``limit`` messages (all when ``None``), in insertion order.

    An unknown session gives an empty transcript and creates nothing.
    """
    conv = find_session(ctx, session_id)
    if conv is None:
        return SessionTranscript(
            session_id=session_id,
            conversation_id=session_conversation_id(ctx.workspace, session_id),
            exists=False,
            created_at=datetime.now(UTC),
        )
    name = _session_names(ctx, [conv.pk]).get(conv.pk, session_id)
    messages = _messages_of(ctx, conv, limit) if with_messages else []
    return _transcript(ctx, conv, name, messages)


def list_session_conversations(ctx: Ctx, limit: int | None) -> list[SessionTranscript]:
    """Every conversation of the workspace as a message-less transcript, newest first."""
    stmt = select(c).where(c.c.workspace == ctx.workspace)
    stmt = stmt.order_by(c.c.created_at.desc(), c.c.pk.desc())
    if limit is not None:
        stmt = stmt.limit(limit)
    rows = ctx.conn.execute(stmt).all()
    names = _session_names(ctx, [row.pk for row in rows])
    return [_transcript(ctx, row, names.get(row.pk, row.id), []) for row in rows]


def list_sessions(ctx: Ctx, limit: int) -> list[SessionInfo]:
    """Sessions with live message counts, most recently active first."""
    counts = (
        select(m.c.conversation_pk, func.count().label("n"))
        .group_by(m.c.conversation_pk)
        .subquery()
    )
    rows = ctx.conn.execute(
        select(c, func.coalesce(counts.c.n, 0).label("live_count"))
        .outerjoin(counts, counts.c.conversation_pk == c.c.pk)
        .where(c.c.workspace == ctx.workspace)
        .order_by(c.c.updated_at.desc(), c.c.pk.desc())
        .limit(limit)
    ).all()
    names = _session_names(ctx, [row.pk for row in rows])
    return [
        SessionInfo(
            session_id=names.get(row.pk, row.id),
            conversation_id=row.id,
            message_count=int(row.live_count),
            created_at=datetime.fromisoformat(row.created_at),
            updated_at=when(row.updated_at),
        )
        for row in rows
    ]


def delete_message(ctx: Ctx, message_id: str) -> bool:
    """Delete one message; ``False`` when no such message exists (or it is already gone)."""
    row = ctx.conn.execute(
        select(m.c.pk, m.c.conversation_pk).where(
            m.c.id == message_id, m.c.workspace == ctx.workspace
        )
    ).first()
    if row is None:
        return False
    conversations.unindex_messages(ctx, [row.pk])
    ctx.conn.execute(delete(m).where(m.c.pk == row.pk))
    ctx.conn.execute(
        update(c)
        .where(c.c.pk == row.conversation_pk)
        .values(message_count=func.max(c.c.message_count - 1, 0))
    )
    return True


def clear_session(ctx: Ctx, session_id: str) -> None:
    """Delete the session's conversation and messages; an unknown session is a no-op."""
    conv = find_session(ctx, session_id)
    if conv is not None:
        conversations.delete_conversation(ctx, conv.id)


def search_session_messages(
    ctx: Ctx, query: str, session_id: str | None, limit: int, threshold: float
) -> list[Message]:
    """Messages by word overlap with ``query`` (score ≥ ``threshold``), best first; one
    session when ``session_id`` is given, else the whole workspace."""
    if session_id is None:
        scope = scope_token("w", ctx.workspace)
    else:
        conv = find_session(ctx, session_id)
        if conv is None:
            return []
        scope = scope_token("c", conv.id)
    k = max(limit * _CANDIDATES_PER_RESULT, _MIN_CANDIDATES)
    deferred_fts.require_indexed(ctx)
    pks = sorted(pk for pk, _ in bm25(ctx.conn, "messages_fts", match_query(query, scope), k))
    if not pks:
        return []
    rows = {
        row.pk: row
        for row in ctx.conn.execute(
            select(m, c.c.id.label("conv_id"))
            .join(c, c.c.pk == m.c.conversation_pk)
            .where(m.c.pk.in_(pks), m.c.workspace == ctx.workspace)
        ).all()
    }
    ranked = rank_by_overlap(
        query,
        ((pk, rows[pk].content) for pk in pks if pk in rows),
        limit=limit,
        threshold=threshold,
    )
    return [to_message(rows[pk], rows[pk].conv_id, value) for pk, value in ranked]
