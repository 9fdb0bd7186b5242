"""The message write path and the extraction queue it fills.

A message is written with its full-text entry, its ``vector_queue`` row (``vector_lane``)
and — for user and assistant messages when extraction is on — an ``extraction_units`` row
with status ``pending``, all in one transaction: no message is ever stored without its
queue entries, so work a crash interrupted is found again (``conversations_with_pending``,
``workspaces_with_pending``) when a store next opens.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select

from nams_local.models import Message, NewMessage

from . import dbapi
from . import schema as s
from .conversations import add_messages
from .graph_writes import user_name
from .store import Ctx
from .summaries import PendingMessage
from .vectors import Vectors

__all__ = [
    "PendingMessage",
    "Start",
    "conversations_with_pending",
    "pending_count",
    "pending_messages",
    "store_messages",
    "workspaces_with_pending",
]

m, xu, c = s.messages, s.extraction_units, s.conversations


#: What extracting a conversation's new messages starts from: the conversation's user id,
#: the user's stated name, and the messages still ``pending``.
Start = tuple[str | None, str | None, list[PendingMessage]]


#: DB-API SQL (``dbapi.py``): every drained batch of every workspace runs it on the writer.
#: The conversation is found by its API id in the same statement (no lookup of its own).
_PENDING = (
    "SELECT c.user_id, m.pk, m.id, m.role, m.content FROM conversations AS c "
    "JOIN messages AS m ON m.conversation_pk = c.pk "
    "JOIN extraction_units AS xu ON xu.message_pk = m.pk "
    "WHERE c.id = ? AND c.workspace = ? AND xu.status = 'pending'"
)


def pending_messages(
    ctx: Ctx,
    conversation_id: str,
    message_ids: Sequence[str] | None,
    limit: int | None = None,
) -> Start:
    """The conversation's user id, the user's stated name, and the messages whose
    extraction is ``pending`` (``message_ids`` narrows them; at most ``limit``), oldest
    first. A conversation that does not exist (any more) has none: ``(None, None, [])``
    (its messages and their units went with it)."""
    params: list[object] = [conversation_id, ctx.workspace]
    sql = _PENDING
    if message_ids is not None:
        ids = list(message_ids)
        sql += f" AND m.id IN ({', '.join('?' * len(ids))})"
        params += ids
    sql += " ORDER BY m.pk"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    rows = dbapi.raw_connection(ctx.conn).execute(sql, params).fetchall()
    if not rows:
        return None, None, []
    user_id = rows[0][0]
    pending = [PendingMessage(*row[1:]) for row in rows]
    return user_id, user_name(ctx, user_id), pending


def store_messages(
    ctx: Ctx,
    conversation_id: str,
    messages: Sequence[NewMessage],
    embedded: Vectors | None,
    extract: bool,
    inline: bool = False,
) -> tuple[list[Message], Start | None]:
    """Write the messages and, when they are to be extracted ``inline`` (sync mode: the
    caller waits for it), read in the same unit of work what extraction starts from —
    one trip to the database thread instead of two. Queued (background) extraction reads
    its start itself, later, so the request's unit of work does not."""
    stored = add_messages(ctx, conversation_id, messages, embedded, extract)
    if not extract or not inline:
        return stored, None
    return stored, pending_messages(ctx, conversation_id, [msg.id for msg in stored])


def conversations_with_pending(ctx: Ctx) -> list[str]:
    """Ids of the workspace's conversations that have messages still ``pending``."""
    rows = ctx.conn.execute(
        select(c.c.id)
        .where(
            c.c.workspace == ctx.workspace,
            select(xu.c.message_pk)
            .join(m, m.c.pk == xu.c.message_pk)
            .where(m.c.conversation_pk == c.c.pk, xu.c.status == "pending")
            .exists(),
        )
        .order_by(c.c.pk)
    ).all()
    return [row.id for row in rows]


def workspaces_with_pending(ctx: Ctx) -> list[str]:
    """Every workspace of the store with units still ``pending`` (``ctx``'s first)."""
    rows = ctx.conn.execute(
        select(c.c.workspace)
        .join(m, m.c.conversation_pk == c.c.pk)
        .join(xu, xu.c.message_pk == m.c.pk)
        .where(xu.c.status == "pending")
        .distinct()
    ).scalars()
    found = sorted(set(rows))
    return sorted(found, key=lambda ws: ws != ctx.workspace)


def pending_count(ctx: Ctx, conversation_id: str | None) -> int:
    """Units still ``pending`` in the conversation (``None``: the whole workspace); a
    conversation that does not exist (any more) has none."""
    stmt = (
        select(func.count())
        .select_from(xu)
        .join(m, m.c.pk == xu.c.message_pk)
        .join(c, c.c.pk == m.c.conversation_pk)
        .where(xu.c.status == "pending", c.c.workspace == ctx.workspace)
    )
    if conversation_id is not None:
        stmt = stmt.where(c.c.id == conversation_id)
    return int(ctx.conn.execute(stmt).scalar_one())
