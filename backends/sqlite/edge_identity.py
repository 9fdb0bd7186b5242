"""When a new relationship is one the graph already holds, so it is reused, not doubled.

Running the same script twice (the README's first example on one ``memory.db``) used to
add a second, identical ``WORKS_AT`` edge each time. A relationship is *identical* to a
new one when it has the same source entity, the same target entity and the same type
(compared exactly: relationship types are case-sensitive, as in Neo4j) and is still
*current*. Until relationships carry validity every stored one is current; once they do,
"current" means not yet ended (no ``valid_until``, or one in the future), and only
``identical_edge`` needs to learn that (docs/wire-decisions.md, H4).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Row, select, update

from nams_local.models import Relationship

from . import schema as s
from .rows import dumps, loads, when
from .store import Ctx

__all__ = ["identical_edge", "reuse_edge"]

r = s.relationships


def identical_edge(ctx: Ctx, source_pk: int, target_pk: int, type_: str) -> Row[Any] | None:
    """The oldest current relationship ``source -[type_]-> target`` of the workspace."""
    return ctx.conn.execute(
        select(r)
        .where(
            r.c.workspace == ctx.workspace,
            r.c.source_pk == source_pk,
            r.c.target_pk == target_pk,
            r.c.type == type_,
        )
        .order_by(r.c.pk)
        .limit(1)
    ).first()


def reuse_edge(
    ctx: Ctx,
    row: Row[Any],
    source_id: str,
    target_id: str,
    properties: dict[str, Any],
    confidence: float | None,
) -> Relationship:
    """The identical edge, returned instead of a new one. As for a reused entity, it gains
    property keys it did not have and a confidence if it had none; nothing it holds is
    overwritten (the first statement keeps its provenance)."""
    held: dict[str, Any] = loads(row.properties)
    merged = {**properties, **held}
    kept = row.confidence if row.confidence is not None else confidence
    if merged != held or kept != row.confidence:
        ctx.conn.execute(
            update(r).where(r.c.pk == row.pk).values(properties=dumps(merged), confidence=kept)
        )
        mirror = ctx.store.graph(ctx.workspace)
        mirror.remove_edge(row.id)
        mirror.add_edge(row.id, source_id, target_id, row.type, merged, kept)
    return Relationship(
        id=row.id,
        source_id=source_id,
        target_id=target_id,
        type=row.type,
        properties=merged,
        confidence=kept,
        created_at=when(row.created_at),
    )
