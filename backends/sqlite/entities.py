"""Entities and relationships: the long-term memory graph of a workspace.

Merging keeps the hosted semantics: the source's relationships move to the target, a
``SAME_AS`` edge records the merge, and the source stays (so its id still resolves) but is
inert: gone from lists, searches, the graph and the indexes. Chains are flattened, so an
entity merged into A, when A is merged into B, points at B.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Row, and_, delete, func, insert, or_, select, text, update
from sqlalchemy.orm import aliased

from nams_local.errors import InvalidInputError
from nams_local.models import (
    Entity,
    EntityDetails,
    EntityGraph,
    EntityHistory,
    EntityMention,
    EntityRelationship,
    FeedbackResult,
    MergeCandidate,
    MergeResult,
    Relationship,
    SearchMode,
    SearchResult,
    Validity,
)

from . import dbapi, deferred_fts, entity_keys, prepared
from . import schema as s
from .rows import dumps, loads, name_key, new_id, now, to_entity, when
from .search import bm25, rank
from .store import Ctx, entity_text
from .text import entity_scope, match_query, phrase_query, scope_token, terms
from .validity import Fact, invalidate, write_fact
from .validity_rules import edge_validity
from .vectors import Vector, Vectors

__all__ = [
    "active_entity",
    "add_entity",
    "add_relationship",
    "delete_entity",
    "delete_relationship",
    "details_of",
    "entity_feedback",
    "entity_row",
    "entity_text_hits",
    "find_entity",
    "get_entity",
    "get_entity_by_name",
    "get_graph",
    "get_history",
    "invalidate_relationship",
    "list_entities",
    "merge_candidates",
    "merge_entities",
    "neighbourhood",
    "put_entity",
    "put_relationship",
    "ranked_entities",
    "relationships_of",
    "search_entities",
    "unindex_entities",
    "update_entity",
]

e, r = s.entities, s.relationships
SAME_AS = "SAME_AS"


def entity_row(ctx: Ctx, entity_id: str) -> Any:
    return ctx.row(e, entity_id, "entity")


def _index(
    ctx: Ctx, pk: int, name: str, type_: str, description: str | None, vector: Vectors | None
) -> None:
    """(Re)write the entity's full-text and vector entries (``vector``: 1 row, precomputed)."""
    conn = ctx.conn
    body = entity_text(name, description)
    # DB-API SQL (``dbapi.py``): every new extracted entity runs these on the writer.
    dbapi.execute(conn, "DELETE FROM entities_fts WHERE rowid = ?", (pk,))
    dbapi.execute(
        conn,
        "INSERT INTO entities_fts(rowid, body, scope) VALUES (?, ?, ?)",
        (pk, body, entity_scope(ctx.workspace, type_)),
    )
    if ctx.vectors is not None and vector is not None:
        ctx.vectors.entities.add(conn, [(pk, ctx.workspace, type_.casefold())], vector)


def unindex_entities(ctx: Ctx, pks: Sequence[int]) -> None:
    """Drop the entities' full-text and vector entries (their rows stay)."""
    if not pks:
        return
    ctx.conn.execute(text("DELETE FROM entities_fts WHERE rowid = :pk"), [{"pk": pk} for pk in pks])
    if ctx.vectors is not None:
        ctx.vectors.entities.delete(ctx.conn, pks)


def add_entity(
    ctx: Ctx,
    name: str,
    type_: str,
    description: str | None,
    properties: dict[str, str] | None,
    vector: Vectors | None,
    *,
    source_stage: str = "api",
    confidence: float = 1.0,
    candidates: bool = True,
    resolve: bool = True,
) -> Entity:
    """Create the entity, or return the existing one ``name`` resolves to (``reused``).

    A reused entity gains the description if it had none and any new property keys;
    nothing it already holds is overwritten. A new entity lists near names of its type
    as ``merge_candidates`` (when ``candidates``). See ``resolution.py``.
    ``resolve=False`` always creates a new entity, even when ``name`` resolves to an
    existing one ("TechCorps" → "TechCorp"): the legacy API's exact (name, type) identity.
    """
    written = (description, properties, vector, source_stage, confidence)
    entity_id, row = _put(ctx, name, type_, written, resolve=resolve)
    entity = to_entity(row if row is not None else entity_row(ctx, entity_id))
    entity.reused = row is not None
    if candidates and row is None:
        entity.merge_candidates = merge_candidates(ctx, entity_id, name, type_) or None
    return entity


def put_entity(
    ctx: Ctx,
    name: str,
    type_: str,
    description: str | None,
    vector: Vectors | None,
    *,
    source_stage: str,
    confidence: float = 1.0,
) -> str:
    """``add_entity`` (resolving, no properties) without its answer: the id of the new or
    reused entity. Applying an extraction needs only the id, and the answer (the row read
    back and a pydantic model built from it) was about a third of writing a new name."""
    entity_id, _ = _put(ctx, name, type_, (description, None, vector, source_stage, confidence))
    return entity_id


#: What ``_put`` writes besides the name and type: ``add_entity``'s description,
#: properties, vector, source stage and confidence.
_Written = tuple[str | None, dict[str, str] | None, Vectors | None, str, float]


def _put(
    ctx: Ctx, name: str, type_: str, written: _Written, *, resolve: bool = True
) -> tuple[str, Any]:
    """Write the entity: ``(its id, its row if an existing entity was reused, else None)``."""
    description, properties, vector, source_stage, confidence = written
    mirror = ctx.store.graph(ctx.workspace)
    existing = mirror.find(name, type_) if resolve else None
    if existing is not None:
        return existing, _reuse(ctx, existing, description, properties)
    stamp = now()
    values = {
        "id": new_id(),
        "workspace": ctx.workspace,
        "name": name,
        "name_key": name_key(name),
        "type": type_,
        "description": description,
        "properties": dumps(properties or {}),
        "confidence": confidence,
        "source_stage": source_stage,
        "created_at": stamp,
        "updated_at": stamp,
    }
    if not resolve:  # a new entity in any case; it holds the name's key only if free
        pk = entity_keys.insert_unresolved(ctx.conn, values)
    else:
        found = entity_keys.insert_resolved(ctx.conn, values)
        if found is None:  # a live entity holds the key though the mirror missed it
            held = entity_keys.holder(ctx.conn, ctx.workspace, name, type_)
            if held is None:
                raise RuntimeError(f"entity {name!r} conflicts with no live entity")
            return held, _reuse(ctx, held, description, properties)
        pk = found
    id_ = str(values["id"])
    if vector is None and ctx.vectors is not None:
        # Only when a concurrent delete made a name we planned to reuse new again.
        vector = ctx.vectors.embedder.embed([entity_text(name, description)])
    _index(ctx, pk, name, type_, description, vector)
    mirror.add_node(id_, name, type_, description)
    return id_, None


def merge_candidates(ctx: Ctx, entity_id: str, name: str, type_: str) -> list[MergeCandidate]:
    """Near names of ``type_`` that ``name`` (entity ``entity_id``) may be, best first.

    Reads only the in-memory mirror, so the server runs it after the write, on the
    workspace's read lane: a slow comparison never holds the writer every tenant shares.
    """
    mirror = ctx.store.graph(ctx.workspace)
    found = []
    for other, sim in mirror.candidates(name, type_, exclude=entity_id):
        node = mirror.graph.nodes.get(other)
        if node is not None:  # deleted since the snapshot was taken
            found.append(
                MergeCandidate(id=other, name=node["name"], type=node["type"], similarity=sim)
            )
    return found


def _reuse(
    ctx: Ctx, entity_id: str, description: str | None, properties: dict[str, str] | None
) -> Any:
    """The existing entity gains what it lacked; returns its row as it now is."""
    row = entity_row(ctx, entity_id)
    values: dict[str, Any] = {}
    if description and not row.description:
        values["description"] = description
    held = loads(row.properties)
    added = {k: v for k, v in (properties or {}).items() if k not in held}
    if added:
        values["properties"] = dumps({**held, **added})
    if values:
        values["updated_at"] = now()
        ctx.conn.execute(update(e).where(e.c.pk == row.pk).values(**values))
        if "description" in values:
            # Text index gains the description; the vector keeps the name's embedding.
            _index(ctx, row.pk, row.name, row.type, description, None)
            ctx.store.graph(ctx.workspace).add_node(row.id, row.name, row.type, description)
        row = entity_row(ctx, entity_id)
    return row


def find_entity(ctx: Ctx, name: str, type_: str) -> str | None:
    """The id of the active entity ``name`` of ``type_`` resolves to, if any."""
    return ctx.store.graph(ctx.workspace).find(name, type_)


def list_entities(ctx: Ctx, type_: str | None) -> list[Entity]:
    stmt = select(e).where(e.c.workspace == ctx.workspace, e.c.merged_into_pk.is_(None))
    if type_:
        stmt = stmt.where(func.lower(e.c.type) == type_.strip().lower())
    return [to_entity(row) for row in ctx.conn.execute(stmt.order_by(e.c.pk)).all()]


def relationships_of(ctx: Ctx, pks: Sequence[int]) -> dict[int, list[EntityRelationship]]:
    """Each entity's relationships (keyed by pk): outgoing then incoming, each in creation
    order; one prepared statement whatever the number of entities (a turn expands several)."""
    out: dict[int, list[EntityRelationship]] = {pk: [] for pk in pks}
    for row in prepared.relationships_of_entities(ctx.conn, list(pks)):
        out[row.near_pk].append(
            EntityRelationship(
                type=row.type,
                target_id=row.o_id,
                target_name=row.o_name,
                target_type=row.o_type,
                direction="outgoing" if row.outgoing else "incoming",
                id=row.id,
                properties=loads(row.properties),
                confidence=row.confidence,
                **edge_validity(row),
            )
        )
    return out


def details_of(ctx: Ctx, rows: Sequence[Row[Any]]) -> dict[str, EntityDetails]:
    """``get_entity``'s answer for each entity row, keyed by id (relationships batched)."""
    relationships = relationships_of(ctx, [row.pk for row in rows])
    return {
        row.id: EntityDetails(**to_entity(row).model_dump(), relationships=relationships[row.pk])
        for row in rows
    }


def get_entity(ctx: Ctx, entity_id: str) -> EntityDetails:
    [details] = details_of(ctx, [entity_row(ctx, entity_id)]).values()
    return details


def update_entity(
    ctx: Ctx,
    entity_id: str,
    name: str | None,
    description: str | None,
    vector: Vectors | None,
) -> None:
    """Rename / redescribe; ``vector`` embeds the new ``entity_text`` (computed by the caller)."""
    row = entity_row(ctx, entity_id)
    values: dict[str, Any] = {"updated_at": now()}
    if name is not None:
        values["name"] = name
        values["name_key"] = name_key(name)
    if description is not None:
        values["description"] = description
    ctx.conn.execute(update(e).where(e.c.pk == row.pk).values(**values))
    new_name = values.get("name", row.name)
    new_description = values.get("description", row.description)
    if row.merged_into_pk is None:
        if name is not None:  # the new name's key, unless another entity holds it
            entity_keys.release(ctx.conn, row.pk)
            entity_keys.claim(ctx.conn, row.pk, new_name, row.type)
        _index(ctx, row.pk, new_name, row.type, new_description, vector)
        ctx.store.graph(ctx.workspace).add_node(row.id, new_name, row.type, new_description)


def delete_entity(ctx: Ctx, entity_id: str) -> None:
    """Delete the entity, its relationships, and the inert entities merged into it.
    Idempotent: an id not (or no longer) in this workspace changes nothing (W2)."""
    row = ctx.find(e, entity_id)
    if row is None:
        return
    aliases = [pk for (pk,) in ctx.conn.execute(select(e.c.pk).where(e.c.merged_into_pk == row.pk))]
    pks = [*aliases, row.pk]
    unindex_entities(ctx, pks)
    ctx.conn.execute(delete(e).where(e.c.pk.in_(aliases)))
    ctx.conn.execute(delete(e).where(e.c.pk == row.pk))
    ctx.store.graph(ctx.workspace).remove_node(row.id)


def search_entities(
    ctx: Ctx,
    query: str,
    query_vector: Vector | None,
    type_: str | None,
    limit: int,
    mode: SearchMode,
    weight: float,
) -> SearchResult[Entity]:
    found = ranked_entities(ctx, query, query_vector, type_, limit, mode, weight)
    return SearchResult[Entity](
        items=[to_entity(row, score) for row, score in found], search_type=mode
    )


def entity_text_hits(ctx: Ctx, query: str, type_: str | None, k: int) -> list[tuple[int, float]]:
    """The workspace's best ``k`` entities (of ``type_``) by BM25, as ``(pk, text score)``:
    ``ranked_entities``' full-text part, separate so a turn can run it while its query is
    still being embedded."""
    scopes = [] if _sole_workspace(ctx) else [scope_token("w", ctx.workspace)]
    if type_:
        scopes.append(scope_token("t", type_.strip().casefold()))
    match = match_query(query, *scopes)
    return bm25(ctx.conn, "entities_fts", match, k, len(terms(query)))


def _sole_workspace(ctx: Ctx) -> bool:
    """Whether no other workspace has an entity (two index seeks on ``ix_entities_ws_*``).

    Then the workspace's scope token, which every entity row carries, filters nothing, and
    it is not free: FTS5's BM25 reads a phrase's whole doclist for its IDF, and the token's
    doclist is the workspace itself, so a query over 10k entities spent half its time on
    it (1.45 -> 0.62 ms on the 100k ``turn`` store's entity table). The scores are the
    same without it (the scope column weighs 0), and so are the rows: there are no others.
    Read in the search's own transaction, so a concurrent first entity of another
    workspace is either seen here or not yet in the index the search reads.
    """
    found = dbapi.fetch_one(
        ctx.conn,
        "SELECT EXISTS (SELECT 1 FROM entities WHERE workspace < ?) "
        "OR EXISTS (SELECT 1 FROM entities WHERE workspace > ?) AS others",
        (ctx.workspace, ctx.workspace),
    )
    return found is not None and not found.others


def ranked_entities(
    ctx: Ctx,
    query: str,
    query_vector: Vector | None,
    type_: str | None,
    limit: int,
    mode: SearchMode,
    weight: float,
    text_hits: list[tuple[int, float]] | None = None,
    vector_hits: list[tuple[int, float]] | None = None,
) -> list[tuple[Row[Any], float]]:
    """``search_entities``' hits as ``(entity row, score)``, best first (the rows, so a
    caller can read more about them in the same transaction); ``text_hits``: what
    ``entity_text_hits`` read for ``candidates(limit)``, when already read;
    ``vector_hits``: the vector search's, for as many as ``rank`` asks (``turns.py``
    begins it before the text SQL ends)."""
    conn = ctx.conn
    vectors = ctx.vectors

    def text_search(k: int) -> list[tuple[int, float]]:
        if text_hits is not None:
            return text_hits[:k]
        return entity_text_hits(ctx, query, type_, k)

    vector_search = None
    if vectors is not None and query_vector is not None:
        sub = type_.strip().casefold() if type_ else None

        def vector_search(k: int) -> list[tuple[int, float]]:
            assert vectors is not None and query_vector is not None
            if vector_hits is not None:
                return vector_hits[:k]
            if ctx.connection is not None:  # a reader thread: the published snapshot
                return vectors.entities.search_committed(conn, query_vector, k, ctx.workspace, sub)
            return vectors.entities.search(conn, query_vector, k, ctx.workspace, sub)

    ranked = rank(mode, limit, text_search, vector_search, weight)
    found = prepared.current_entities_by_pks(conn, [x.pk for x in ranked], ctx.workspace)
    rows = {row.pk: row for row in found}
    return [(rows[x.pk], x.score) for x in ranked if x.pk in rows]


def entity_feedback(
    ctx: Ctx, entity_id: str, user_score: float | None, confirmed: bool | None
) -> FeedbackResult:
    row = entity_row(ctx, entity_id)
    values: dict[str, Any] = {"updated_at": now()}
    if user_score is not None:
        values["user_score"] = float(user_score)
    if confirmed is not None:
        values["confirmed"] = int(confirmed)
    ctx.conn.execute(update(e).where(e.c.pk == row.pk).values(**values))
    return FeedbackResult(id=row.id, updated=True)


def get_history(ctx: Ctx, entity_id: str) -> EntityHistory:
    """Every message that mentions the entity: linked by extraction, or naming it (or an
    entity merged into it) as a phrase, across the workspace's conversations, oldest first."""
    row = entity_row(ctx, entity_id)
    conn = ctx.conn
    names = [row.name]
    names += [n for (n,) in conn.execute(select(e.c.name).where(e.c.merged_into_pk == row.pk))]
    matched: dict[int, str] = {}
    m, c, em = s.messages, s.conversations, s.entity_mentions
    for (pk,) in conn.execute(
        select(em.c.message_pk)
        .join(e, e.c.pk == em.c.entity_pk)
        .where(or_(e.c.pk == row.pk, e.c.merged_into_pk == row.pk))
    ):
        matched.setdefault(int(pk), row.name)
    ws_token = scope_token("w", ctx.workspace)
    if names:
        deferred_fts.require_indexed(ctx)
    for name in names:
        match = phrase_query(name, ws_token)
        if match is None:
            continue
        for (pk,) in conn.execute(
            text("SELECT rowid FROM messages_fts WHERE messages_fts MATCH :q"), {"q": match}
        ):
            matched.setdefault(int(pk), name)
    # "When did you learn this?": each relationship as learned, and closed if it was.
    changes = sorted(
        relationships_of(ctx, [row.pk])[row.pk],
        key=lambda rel: (rel.recorded_at or datetime.min.replace(tzinfo=UTC), rel.id or ""),
    )
    if not matched:
        return EntityHistory(entity_id=row.id, mentions=[], changes=changes)
    rows = conn.execute(
        select(m.c.pk, m.c.id, m.c.role, m.c.content, m.c.created_at, c.c.id.label("conv_id"))
        .join(c, c.c.pk == m.c.conversation_pk)
        .where(m.c.pk.in_(list(matched)), m.c.workspace == ctx.workspace)
        .order_by(m.c.pk)
    ).all()
    mentions = [
        EntityMention(
            message_id=x.id,
            conversation_id=x.conv_id,
            role=x.role,
            content=x.content,
            created_at=when(x.created_at),
            matched_name=matched[x.pk],
        )
        for x in rows
    ]
    return EntityHistory(entity_id=row.id, mentions=mentions, changes=changes)


def active_entity(ctx: Ctx, entity_id: str, role: str) -> Any:
    """The row of an entity a relationship may end at (``role``: "source" or "target");
    an entity merged into another refuses it."""
    row = entity_row(ctx, entity_id)
    if row.merged_into_pk is not None:
        raise InvalidInputError(f"{role} entity {entity_id!r} was merged into another entity")
    return row


def merge_entities(ctx: Ctx, source_id: str, target_id: str) -> MergeResult:
    if source_id == target_id:
        raise InvalidInputError("cannot merge an entity into itself")
    source = active_entity(ctx, source_id, "source")
    target = active_entity(ctx, target_id, "target")
    conn = ctx.conn
    conn.execute(update(r).where(r.c.source_pk == source.pk).values(source_pk=target.pk))
    conn.execute(update(r).where(r.c.target_pk == source.pk).values(target_pk=target.pk))
    # An edge between the two becomes a self-loop on the target: meaningless, dropped.
    conn.execute(delete(r).where(r.c.source_pk == target.pk, r.c.target_pk == target.pk))
    # Moving may duplicate an edge the target already had: keep the oldest.
    dup = aliased(r)
    conn.execute(
        delete(r).where(
            or_(r.c.source_pk == target.pk, r.c.target_pk == target.pk),
            select(dup.c.pk)
            .where(
                and_(
                    dup.c.source_pk == r.c.source_pk,
                    dup.c.target_pk == r.c.target_pk,
                    dup.c.type == r.c.type,
                    dup.c.pk < r.c.pk,
                )
            )
            .exists(),
        )
    )
    _insert_relationship(ctx, source.pk, target.pk, SAME_AS, {}, 1.0)
    conn.execute(update(e).where(e.c.merged_into_pk == source.pk).values(merged_into_pk=target.pk))
    conn.execute(
        update(e).where(e.c.pk == source.pk).values(merged_into_pk=target.pk, updated_at=now())
    )
    em = s.entity_mentions
    conn.execute(
        text(
            "INSERT OR IGNORE INTO entity_mentions(entity_pk, message_pk) "
            "SELECT :target, message_pk FROM entity_mentions WHERE entity_pk = :source"
        ),
        {"target": target.pk, "source": source.pk},
    )
    conn.execute(delete(em).where(em.c.entity_pk == source.pk))
    entity_keys.release(conn, source.pk)  # an inert entity holds no key; the target may
    entity_keys.claim(conn, target.pk, target.name, target.type)
    unindex_entities(ctx, [source.pk])
    ctx.store.drop_graph(ctx.workspace)
    return MergeResult(status="merged", source_id=source.id, target_id=target.id)


def get_graph(ctx: Ctx, as_of: str | None = None) -> EntityGraph:
    """Every live entity and relationship; with ``as_of``, only the edges that held then."""
    mirror = ctx.store.graph(ctx.workspace)
    return mirror.view(mirror.at(as_of))


def neighbourhood(ctx: Ctx, entity_id: str, depth: int, as_of: str | None = None) -> EntityGraph:
    row = active_entity(ctx, entity_id, "the")  # a merged entity has no neighbourhood
    return ctx.store.graph(ctx.workspace).neighbourhood(row.id, depth, as_of)


def _insert_relationship(
    ctx: Ctx,
    source_pk: int,
    target_pk: int,
    type_: str,
    properties: dict[str, Any],
    confidence: float | None,
) -> str:
    rel_id = new_id()
    ctx.conn.execute(
        insert(r).values(
            id=rel_id,
            workspace=ctx.workspace,
            source_pk=source_pk,
            target_pk=target_pk,
            type=type_,
            properties=dumps(properties),
            confidence=confidence,
            created_at=now(),
        )
    )
    return rel_id


def add_relationship(
    ctx: Ctx,
    source_id: str,
    target_id: str,
    type_: str,
    properties: dict[str, Any] | None,
    confidence: float | None,
    *,
    valid_from: str | None = None,
    valid_until: str | None = None,
    supersede: bool = True,
    ended: bool = False,
    source_message_id: str | None = None,
    said_on: str | None = None,
) -> Relationship:
    """Write a relationship by the validity rules (``validity.py``): an identical open
    edge is reused, a single-valued type closes the subject's previous edge (unless
    ``supersede`` is off), an ``ended`` fact closes the edge it names."""
    source = active_entity(ctx, source_id, "source")
    target = active_entity(ctx, target_id, "target")
    fact = Fact(
        source.pk,
        target.pk,
        type_,
        properties or {},
        confidence,
        valid_from=valid_from,
        valid_until=valid_until,
        ended=ended,
        supersede=supersede,
        source_message_id=source_message_id,
        said_on=said_on,
    )
    rel_id, changed = write_fact(ctx, fact, ctx.store.supersession)
    return _mirror_edges(ctx, {rel_id, *changed})[rel_id]


def put_relationship(ctx: Ctx, source: Any, target: Any, fact: Fact) -> None:
    """``add_relationship`` of a ``fact`` between rows already looked up
    (``active_entity``), without its answer. Applying extractions restates the same facts
    message after message: an identical open edge reused unchanged is already in the graph
    mirror as it is, so such a statement costs one query (the subject's edges) where
    ``add_relationship`` ran four (both ends, the edges, the edge read back for the mirror
    and the answer)."""
    rel_id, changed = write_fact(ctx, fact, ctx.store.supersession)
    stale = set(changed)
    if not stale:  # a new edge (read it back for the mirror), or one reused unchanged
        held = ctx.store.graph(ctx.workspace).graph
        if not (
            held.has_edge(source.id, target.id, key=rel_id)
            or held.has_edge(target.id, source.id, key=rel_id)
        ):
            stale.add(rel_id)
    _mirror_edges(ctx, stale)


def _relationship(ctx: Ctx, rel_id: str) -> Relationship:
    row = prepared.relationship_by_id(ctx.conn, rel_id)
    if row is None:  # pragma: no cover - callers pass the id of an edge they just wrote
        # Not refused input (a NamsError would let its group commit): a broken invariant.
        raise LookupError(f"relationship {rel_id!r} vanished inside its own transaction")
    return Relationship(
        id=row.id,
        source_id=row.s_id,
        target_id=row.t_id,
        type=row.type,
        properties=loads(row.properties),
        confidence=row.confidence,
        created_at=when(row.created_at),
        **edge_validity(row),
    )


def _mirror_edges(ctx: Ctx, rel_ids: set[str]) -> dict[str, Relationship]:
    """Bring the graph mirror's copies of these edges up to date (new or closed); returns
    them as read (so the caller does not read its own edge twice)."""
    mirror = ctx.store.graph(ctx.workspace)
    edges: dict[str, Relationship] = {}
    for rel_id in rel_ids:
        rel = edges[rel_id] = _relationship(ctx, rel_id)
        validity = {k: getattr(rel, k) for k in Validity.model_fields}
        mirror.add_edge(
            rel.id, rel.source_id, rel.target_id, rel.type, rel.properties, rel.confidence, validity
        )
    return edges


def invalidate_relationship(
    ctx: Ctx, relationship_id: str, valid_until: str | None
) -> Relationship:
    """Close the edge: it held until ``valid_until`` (default today). Never deletes."""
    invalidate(ctx, relationship_id, valid_until)
    return _mirror_edges(ctx, {relationship_id})[relationship_id]


def delete_relationship(ctx: Ctx, relationship_id: str) -> None:
    result = ctx.conn.execute(
        delete(r).where(r.c.id == relationship_id, r.c.workspace == ctx.workspace)
    )
    if result.rowcount == 0:  # idempotent (W2): already gone, or never in this workspace
        return
    ctx.store.graph(ctx.workspace).remove_edge(relationship_id)


def get_entity_by_name(ctx: Ctx, name: str, type_: str | None) -> Entity | None:
    stmt = select(e).where(
        e.c.workspace == ctx.workspace,
        e.c.name_key == name_key(name),
        e.c.merged_into_pk.is_(None),
    )
    if type_:
        stmt = stmt.where(func.lower(e.c.type) == type_.strip().lower())
    row = ctx.conn.execute(stmt.order_by(e.c.pk).limit(1)).first()
    return to_entity(row) if row is not None else None
