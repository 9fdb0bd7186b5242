"""Reading every conversation and every message of a workspace, oldest first, in pages.

The list routes (``list_conversations``, ``list_messages``) return the newest 200 at most,
which is all the hosted contract offers; a full copy of a local workspace (``nams-local
sync --to``) needs everything, in order, without holding it all. Each page is a keyset
range scan (``pk > cursor``, the cursor being the last row's API id), so a page costs the
same at the start of a million-message conversation as at its end; ``skip`` is an
``OFFSET`` the caller uses once, to resume at a count it recorded earlier.

Order is insertion order (``pk``), which is the order ``list_messages`` reverses and the
order conversations were created in. Synchronous functions of a ``Ctx`` (read only).
"""

from __future__ import annotations

from sqlalchemy import select

from nams_local.errors import NotFoundError
from nams_local.models import Conversation, Message

from . import schema as s
from .conversations import conversation_row
from .rows import to_conversation, to_message
from .store import Ctx

__all__ = ["conversations_page", "messages_page"]

_c = s.conversations
_m = s.messages


def _cursor_pk(ctx: Ctx, table: str, after: str | None) -> int:
    """The pk a page starts after: 0 for the first page; a vanished cursor is an error
    (starting over silently would repeat what the caller already has)."""
    if after is None:
        return 0
    row = ctx.find(_c if table == "conversation" else _m, after)
    if row is None:
        raise NotFoundError(f"{table} {after} not found (the page cursor)")
    return int(row.pk)


def conversations_page(ctx: Ctx, after: str | None, limit: int) -> list[Conversation]:
    start = _cursor_pk(ctx, "conversation", after)
    query = (
        select(_c)
        .where(_c.c.workspace == ctx.workspace, _c.c.pk > start)
        .order_by(_c.c.pk)
        .limit(limit)
    )
    return [to_conversation(row, ctx.workspace) for row in ctx.conn.execute(query)]


def messages_page(
    ctx: Ctx, conversation_id: str, after: str | None, skip: int, limit: int
) -> list[Message]:
    conv = conversation_row(ctx, conversation_id)
    start = _cursor_pk(ctx, "message", after)
    query = (
        select(_m)
        .where(_m.c.conversation_pk == conv.pk, _m.c.pk > start)
        .order_by(_m.c.pk)
        .limit(limit)
        .offset(skip)
    )
    return [to_message(row, conv.id) for row in ctx.conn.execute(query)]
