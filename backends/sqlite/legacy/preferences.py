"""Preferences: what a user likes, by category, global to the workspace.

Every ``add`` stores a new preference (several per category are normal). Search scores the
preference text, its category and its context by word overlap (``overlap``); a category
filter applies before ranking and before the limit.
"""

from __future__ import annotations

from sqlalchemy import select

from .. import schema as s
from ..rows import insert_rows, new_id, now, when
from ..store import Ctx
from .models import Preference
from .overlap import rank_by_overlap

__all__ = ["add_preference", "list_preferences", "search_preferences"]

p = s.preferences


def add_preference(ctx: Ctx, category: str, preference: str, context: str | None) -> Preference:
    stamp = now()
    pref_id = new_id()
    insert_rows(
        ctx.conn,
        p,
        [
            {
                "id": pref_id,
                "workspace": ctx.workspace,
                "category": category,
                "preference": preference,
                "context": context,
                "created_at": stamp,
            }
        ],
    )
    return Preference(
        id=pref_id,
        category=category,
        preference=preference,
        context=context,
        created_at=when(stamp),
    )


def list_preferences(ctx: Ctx, category: str | None, limit: int | None) -> list[Preference]:
    """Oldest first; only ``category`` when given."""
    stmt = select(p).where(p.c.workspace == ctx.workspace)
    if category is not None:
        stmt = stmt.where(p.c.category == category)
    stmt = stmt.order_by(p.c.pk)
    if limit is not None:
        stmt = stmt.limit(limit)
    return [
        Preference(
            id=row.id,
            category=row.category,
            preference=row.preference,
            context=row.context,
            created_at=when(row.created_at),
        )
        for row in ctx.conn.execute(stmt).all()
    ]


def search_preferences(ctx: Ctx, query: str, category: str | None, limit: int) -> list[Preference]:
    everything = list_preferences(ctx, category, None)
    by_id = {pref.id: pref for pref in everything}
    ranked = rank_by_overlap(
        query,
        (
            (pref.id, f"{pref.preference} {pref.category} {pref.context or ''}")
            for pref in everything
        ),
        limit=limit,
    )
    return [by_id[key].model_copy(update={"score": value}) for key, value in ranked]
