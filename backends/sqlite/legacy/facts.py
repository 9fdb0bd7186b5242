"""Facts: subject-predicate-object triples, global to the workspace.

Subject and object are plain strings, stored and returned as given even when they name
entities: a fact is a statement, not a graph edge (``add_relationship`` makes those).
"""

from __future__ import annotations

from sqlalchemy import or_, select

from .. import schema as s
from ..rows import insert_rows, new_id, now, when
from ..store import Ctx
from .models import Fact

__all__ = ["add_fact", "list_facts"]

f = s.facts


def add_fact(ctx: Ctx, subject: str, predicate: str, object_: str) -> Fact:
    stamp = now()
    fact_id = new_id()
    insert_rows(
        ctx.conn,
        f,
        [
            {
                "id": fact_id,
                "workspace": ctx.workspace,
                "subject": subject,
                "predicate": predicate,
                "object": object_,
                "created_at": stamp,
            }
        ],
    )
    return Fact(
        id=fact_id, subject=subject, predicate=predicate, object=object_, created_at=when(stamp)
    )


def list_facts(ctx: Ctx, about: str | None, limit: int | None) -> list[Fact]:
    """Oldest first; with ``about``, the facts whose subject or object is exactly it."""
    stmt = select(f).where(f.c.workspace == ctx.workspace)
    if about is not None:
        stmt = stmt.where(or_(f.c.subject == about, f.c.object == about))
    stmt = stmt.order_by(f.c.pk)
    if limit is not None:
        stmt = stmt.limit(limit)
    return [
        Fact(
            id=row.id,
            subject=row.subject,
            predicate=row.predicate,
            object=row.object,
            created_at=when(row.created_at),
        )
        for row in ctx.conn.execute(stmt).all()
    ]
