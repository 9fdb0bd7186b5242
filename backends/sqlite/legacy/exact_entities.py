"""Entities the legacy way: exact (name, type) identity, explicit merges, typed traversal.

The engine's ``entities`` module serves the hosted contract (where writes may later be
resolved against similar names). The legacy API promises something stricter, and this
module keeps it on the same tables: ``upsert_entity`` matches only the exact pair
(name, type) and never merges by similarity; names resolve exactly, then by the canonical
name an explicit merge set, then by the name of an entity merged away; traversal follows
edges both ways, optionally of one type only; search ranks by word overlap with an exact
name first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row, delete, insert, or_, select
from sqlalchemy.orm import aliased

from nams_local.models import Entity, Relationship

from .. import entities
from .. import schema as s
from ..rows import loads, name_key, to_entity, when
from ..search import bm25
from ..store import Ctx, entity_text
from ..text import match_query, scope_token
from ..vectors import Vectors
from .overlap import rank_by_overlap

__all__ = [
    "entities_by_id",
    "find_by_name",
    "find_relationship",
    "get_live_entity",
    "list_live_entities",
    "merge_into",
    "related_entities",
    "search_by_overlap",
    "upsert_entity",
    "with_canonical",
]

e, r, cn = s.entities, s.relationships, s.entity_canonical_names

#: FTS candidates considered per requested search result.
_CANDIDATES = 200


def _live() -> Any:
    return e.c.merged_into_pk.is_(None)


def _canonical_names(ctx: Ctx, pks: Sequence[int]) -> dict[int, str]:
    if not pks:
        return {}
    rows = ctx.conn.execute(select(cn).where(cn.c.entity_pk.in_(list(pks)))).all()
    return {int(row.entity_pk): str(row.canonical_name) for row in rows}


def _to_entities(ctx: Ctx, rows: Sequence[Row[Any]]) -> list[Entity]:
    """Entities whose ``canonical_name`` is the one a merge set, else ``None``."""
    names = _canonical_names(ctx, [row.pk for row in rows])
    return [to_entity(row).model_copy(update={"canonical_name": names.get(row.pk)}) for row in rows]


def with_canonical(ctx: Ctx, items: Sequence[Entity]) -> list[Entity]:
    """``items`` (from the engine) with ``canonical_name`` as the legacy API defines it."""
    found = entities_by_id(ctx, [item.id for item in items])
    return [
        item.model_copy(update={"canonical_name": found[item.id].canonical_name})
        if item.id in found
        else item
        for item in items
    ]


def entities_by_id(ctx: Ctx, ids: Sequence[str]) -> dict[str, Entity]:
    if not ids:
        return {}
    rows = ctx.conn.execute(
        select(e).where(e.c.id.in_(list(ids)), e.c.workspace == ctx.workspace)
    ).all()
    return {item.id: item for item in _to_entities(ctx, rows)}


def get_live_entity(ctx: Ctx, entity_id: str) -> Entity:
    """The entity (``NotFoundError`` when unknown)."""
    return _to_entities(ctx, [entities.entity_row(ctx, entity_id)])[0]


def upsert_entity(
    ctx: Ctx, name: str, type_: str, description: str | None, vector: Vectors | None
) -> Entity:
    """The live entity with exactly this name and type (a new ``description`` replaces the
    old one), or a new one. ``vector`` embeds ``entity_text(name, description)``."""
    row = ctx.conn.execute(
        select(e)
        .where(e.c.workspace == ctx.workspace, e.c.name == name, e.c.type == type_, _live())
        .order_by(e.c.pk)
        .limit(1)
    ).first()
    if row is None:
        # No name resolution: ``add_entity`` would otherwise reuse an entity whose name
        # merely *resolves* to this one ("TechCorps" → "TechCorp"), which the legacy API
        # forbids.
        created = entities.add_entity(
            ctx, name, type_, description, None, vector, candidates=False, resolve=False
        )
        return get_live_entity(ctx, created.id)
    if description is not None and description != row.description:
        entities.update_entity(ctx, row.id, None, description, vector)
    return get_live_entity(ctx, row.id)


def list_live_entities(ctx: Ctx, type_: str | None, limit: int | None) -> list[Entity]:
    """Live entities oldest first; ``type_`` compares case-insensitively."""
    items = entities.list_entities(ctx, type_)
    return with_canonical(ctx, items if limit is None else items[:limit])


def find_by_name(ctx: Ctx, name: str) -> Entity | None:
    """The oldest live entity named exactly ``name``; else one whose canonical name it is;
    else the live entity that an entity of that name was merged into; else ``None``."""
    row = ctx.conn.execute(
        select(e)
        .where(e.c.workspace == ctx.workspace, e.c.name == name, _live())
        .order_by(e.c.pk)
        .limit(1)
    ).first()
    if row is None:
        row = ctx.conn.execute(
            select(e)
            .join(cn, cn.c.entity_pk == e.c.pk)
            .where(e.c.workspace == ctx.workspace, cn.c.canonical_name == name, _live())
            .order_by(e.c.pk)
            .limit(1)
        ).first()
    if row is None:
        alias = ctx.conn.execute(
            select(e.c.merged_into_pk)
            .where(
                e.c.workspace == ctx.workspace, e.c.name == name, e.c.merged_into_pk.is_not(None)
            )
            .order_by(e.c.pk)
            .limit(1)
        ).scalar()
        if alias is not None:
            row = ctx.conn.execute(select(e).where(e.c.pk == alias)).first()
    return _to_entities(ctx, [row])[0] if row is not None else None


def related_entities(
    ctx: Ctx, entity_id: str, relationship_type: str | None, depth: int
) -> list[Entity]:
    """Entities within ``depth`` hops along edges in either direction (only edges of
    ``relationship_type`` when given), without the start entity, in discovery order.
    An unknown or merged-away start has no neighbours."""
    start = ctx.conn.execute(
        select(e.c.pk).where(e.c.id == entity_id, e.c.workspace == ctx.workspace, _live())
    ).scalar()
    if start is None or depth < 1:
        return []
    seen: dict[int, None] = {int(start): None}
    frontier = [int(start)]
    for _ in range(depth):
        stmt = select(r.c.source_pk, r.c.target_pk).where(
            or_(r.c.source_pk.in_(frontier), r.c.target_pk.in_(frontier))
        )
        if relationship_type is not None:
            stmt = stmt.where(r.c.type == relationship_type)
        found: list[int] = []
        for source, target in ctx.conn.execute(stmt.order_by(r.c.pk)).all():
            for pk in (int(source), int(target)):
                if pk not in seen:
                    seen[pk] = None
                    found.append(pk)
        if not found:
            break
        frontier = found
    reached = [pk for pk in seen if pk != start]
    if not reached:
        return []
    rows = {
        row.pk: row for row in ctx.conn.execute(select(e).where(e.c.pk.in_(reached), _live())).all()
    }
    return _to_entities(ctx, [rows[pk] for pk in reached if pk in rows])


def search_by_overlap(ctx: Ctx, query: str, limit: int) -> list[Entity]:
    """Live entities by word overlap of name and description; an exact name ranks first."""
    match = match_query(query, scope_token("w", ctx.workspace))
    pks = {pk for pk, _ in bm25(ctx.conn, "entities_fts", match, _CANDIDATES)}
    exact_rows = ctx.conn.execute(
        select(e.c.pk).where(e.c.workspace == ctx.workspace, e.c.name_key == name_key(query))
    ).all()
    pks.update(int(pk) for (pk,) in exact_rows)
    if not pks:
        return []
    rows = ctx.conn.execute(
        select(e).where(e.c.pk.in_(pks), e.c.workspace == ctx.workspace, _live()).order_by(e.c.pk)
    ).all()
    by_pk = {row.pk: row for row in rows}
    exact = [row.pk for row in rows if row.name == query]
    exact += [row.pk for row in rows if row.name != query and row.name_key == name_key(query)]
    ranked = rank_by_overlap(
        query,
        ((row.pk, entity_text(row.name, row.description)) for row in rows),
        limit=limit,
        exact=exact,
    )
    found = _to_entities(ctx, [by_pk[pk] for pk, _ in ranked])
    return [
        item.model_copy(update={"score": value})
        for item, (_, value) in zip(found, ranked, strict=True)
    ]


def find_relationship(ctx: Ctx, source_id: str, target_id: str, type_: str) -> Relationship | None:
    """The oldest edge of exactly this (source, target, type), if any."""
    src, tgt = aliased(e), aliased(e)
    row = ctx.conn.execute(
        select(r, src.c.id.label("src_id"), tgt.c.id.label("tgt_id"))
        .join(src, src.c.pk == r.c.source_pk)
        .join(tgt, tgt.c.pk == r.c.target_pk)
        .where(
            r.c.workspace == ctx.workspace,
            src.c.id == source_id,
            tgt.c.id == target_id,
            r.c.type == type_,
        )
        .order_by(r.c.pk)
        .limit(1)
    ).first()
    if row is None:
        return None
    return Relationship(
        id=row.id,
        source_id=row.src_id,
        target_id=row.tgt_id,
        type=row.type,
        properties=loads(row.properties),
        confidence=row.confidence,
        created_at=when(row.created_at),
    )


def merge_into(ctx: Ctx, source_id: str, target_id: str, canonical_name: str | None) -> Entity:
    """Merge ``source_id`` into ``target_id`` (the engine's merge: edges move, ``SAME_AS``
    recorded, the source turns inert) and return the target, ``canonical_name`` set."""
    entities.merge_entities(ctx, source_id, target_id)
    target = entities.entity_row(ctx, target_id)
    if canonical_name is not None:
        ctx.conn.execute(delete(cn).where(cn.c.entity_pk == target.pk))
        ctx.conn.execute(insert(cn).values(entity_pk=target.pk, canonical_name=canonical_name))
    return get_live_entity(ctx, target_id)
