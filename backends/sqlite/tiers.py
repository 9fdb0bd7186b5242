"""The three memory tiers of a conversation: reflections, observations, recent messages.

This module holds the read paths; observations and reflections are written by the
summariser (a separate component), and extraction status by the extraction pipeline.
Until an extractor is configured, every message reports the status ``skipped``.
"""

from __future__ import annotations

import json

from sqlalchemy import select

from nams_local.models import Context, ExtractionStatus, ExtractionUnit, Observation, Reflection

from . import schema as s
from .conversations import conversation_row, list_messages
from .rows import when
from .store import Ctx

__all__ = [
    "CONTEXT_MESSAGES",
    "CONTEXT_OBSERVATIONS",
    "get_context",
    "get_extraction_status",
    "list_observations",
    "list_reflections",
]

#: What ``get_context`` returns (the hosted contract does not say how many).
CONTEXT_MESSAGES = 20
CONTEXT_OBSERVATIONS = 10

o, rf, m, xu = s.observations, s.reflections, s.messages, s.extraction_units


def list_observations(ctx: Ctx, conversation_id: str, limit: int) -> list[Observation]:
    """Newest first, like messages."""
    conv = conversation_row(ctx, conversation_id)
    rows = ctx.conn.execute(
        select(o).where(o.c.conversation_pk == conv.pk).order_by(o.c.pk.desc()).limit(limit)
    ).all()
    return [
        Observation(
            id=row.id,
            conversation_id=conv.id,
            content=row.content,
            created_at=when(row.created_at),
            source_msg_ids=json.loads(row.source_msg_ids),
        )
        for row in rows
    ]


def list_reflections(
    ctx: Ctx, conversation_id: str, *, current_only: bool = False
) -> list[Reflection]:
    """Newest first; ``current_only`` keeps the ones no later reflection superseded."""
    conv = conversation_row(ctx, conversation_id)
    stmt = select(rf).where(rf.c.conversation_pk == conv.pk)
    if current_only:
        stmt = stmt.where(rf.c.superseded_by_id.is_(None))
    rows = ctx.conn.execute(stmt.order_by(rf.c.pk.desc())).all()
    return [
        Reflection(
            id=row.id,
            conversation_id=conv.id,
            content=row.content,
            created_at=when(row.created_at),
            source_obs_ids=json.loads(row.source_obs_ids),
            superseded_by_id=row.superseded_by_id,
        )
        for row in rows
    ]


def get_context(ctx: Ctx, conversation_id: str) -> Context:
    """Current reflections, the newest observations and the newest messages (newest first)."""
    return Context(
        reflections=list_reflections(ctx, conversation_id, current_only=True),
        observations=list_observations(ctx, conversation_id, CONTEXT_OBSERVATIONS),
        recent_messages=list_messages(ctx, conversation_id, CONTEXT_MESSAGES),
    )


def get_extraction_status(ctx: Ctx, conversation_id: str) -> ExtractionStatus:
    conv = conversation_row(ctx, conversation_id)
    rows = ctx.conn.execute(
        select(m.c.id, xu.c.status, xu.c.attempts, xu.c.last_run, xu.c.error)
        .outerjoin(xu, xu.c.message_pk == m.c.pk)
        .where(m.c.conversation_pk == conv.pk)
        .order_by(m.c.pk)
    ).all()
    units = [
        ExtractionUnit(
            message_id=row.id,
            status=row.status or "skipped",
            attempts=row.attempts or 0,
            last_run=when(row.last_run),
            error=row.error,
        )
        for row in rows
    ]
    return ExtractionStatus(conversation_id=conv.id, units=units)
