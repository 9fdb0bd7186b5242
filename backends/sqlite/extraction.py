"""Extraction results into the graph: units of work the pipeline runs on the writer thread.

``pipeline.py`` runs the extractor (which may be a model, so it is async and runs outside
any transaction) and then hands what it found to :func:`apply_extractions`, which in one
transaction resolves names to entities (reusing existing ones, see ``resolution.py``),
binds the speaking user, writes relationships (once per source, type and target) and
mentions, and marks each message's extraction unit ``done`` or ``failed``.

Observation and reflection bookkeeping is here too: which messages an observation is due
for, and writing it (a reflection supersedes the current one).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, insert, select, update

from nams_local.extraction import (
    SELF,
    USER_DESCRIPTION,
    EntityCandidate,
    Extraction,
    SkipEntity,
    is_meta_entity,
)
from nams_local.models import Message, NewMessage

from . import schema as s
from .conversations import EXTRACTED_ROLES, add_messages, conversation_row
from .entities import add_entity, add_relationship, entity_row, merge_entities, update_entity
from .rows import dumps, insert_rows, new_id, now
from .store import Ctx, entity_text
from .vectors import Vectors

__all__ = [
    "EXTRACTED_ROLES",
    "MessageExtraction",
    "PendingMessage",
    "add_observations",
    "add_reflection",
    "apply_extractions",
    "apply_then_due",
    "conversations_with_pending",
    "due_observations",
    "due_reflection",
    "new_entity_names",
    "pending_messages",
    "store_messages",
    "user_name",
]

#: Name of a user's person entity until a message states the name, when it has no id.
ANONYMOUS_USER = "User"


m, xu, e, ue = s.messages, s.extraction_units, s.entities, s.user_entities
o, rf = s.observations, s.reflections


@dataclass(frozen=True, slots=True)
class PendingMessage:
    pk: int
    id: str
    role: str
    content: str


@dataclass(frozen=True, slots=True)
class MessageExtraction:
    """What the extractor made of one message, or the error it raised."""

    message: PendingMessage
    extraction: Extraction | None
    error: str | None = None


def _user_key(user_id: str | None) -> str:
    return user_id or ""


#: What extracting a conversation's new messages starts from: the conversation's user id,
#: the user's stated name, and the messages still ``pending``.
Start = tuple[str | None, str | None, list[PendingMessage]]


def pending_messages(ctx: Ctx, conversation_id: str, message_ids: Sequence[str] | None) -> Start:
    """The conversation's user id, the user's stated name, and the messages whose
    extraction is ``pending`` (``message_ids`` narrows them), oldest first."""
    conv = conversation_row(ctx, conversation_id)
    stmt = (
        select(m.c.pk, m.c.id, m.c.role, m.c.content)
        .join(xu, xu.c.message_pk == m.c.pk)
        .where(m.c.conversation_pk == conv.pk, xu.c.status == "pending")
        .order_by(m.c.pk)
    )
    if message_ids is not None:
        stmt = stmt.where(m.c.id.in_(list(message_ids)))
    rows = ctx.conn.execute(stmt).all()
    pending = [PendingMessage(r.pk, r.id, r.role, r.content) for r in rows]
    return conv.user_id, user_name(ctx, conv.user_id) if pending else None, pending


def store_messages(
    ctx: Ctx,
    conversation_id: str,
    messages: Sequence[NewMessage],
    embedded: Vectors | None,
    extract: bool,
) -> tuple[list[Message], Start | None]:
    """Write the messages and, when they are to be extracted, read in the same unit of
    work what extraction starts from — one trip to the database thread instead of two."""
    stored = add_messages(ctx, conversation_id, messages, embedded, extract)
    if not extract:
        return stored, None
    return stored, pending_messages(ctx, conversation_id, [msg.id for msg in stored])


def conversations_with_pending(ctx: Ctx) -> list[str]:
    """Ids of the workspace's conversations that have messages still ``pending``."""
    c = s.conversations
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


def _self_row(ctx: Ctx, user_id: str | None) -> Any:
    """The user's entity binding, following merges to the live entity."""
    row = ctx.conn.execute(
        select(ue.c.entity_pk, ue.c.named, e.c.id, e.c.name, e.c.merged_into_pk)
        .join(e, e.c.pk == ue.c.entity_pk)
        .where(ue.c.workspace == ctx.workspace, ue.c.user_id == _user_key(user_id))
    ).first()
    if row is not None and row.merged_into_pk is not None:
        ctx.conn.execute(
            update(ue)
            .where(ue.c.workspace == ctx.workspace, ue.c.user_id == _user_key(user_id))
            .values(entity_pk=row.merged_into_pk)
        )
        return _self_row(ctx, user_id)
    return row


def user_name(ctx: Ctx, user_id: str | None) -> str | None:
    """The user's stated name, if a message stated it."""
    row = _self_row(ctx, user_id)
    return str(row.name) if row is not None and row.named else None


def new_entity_names(ctx: Ctx, wanted: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """Which ``(name, type)`` pairs resolve to no existing entity (they need a vector)."""
    mirror = ctx.store.graph(ctx.workspace)
    return [(name, type_) for name, type_ in wanted if mirror.find(name, type_) is None]


class _Binder:
    """Resolves extracted names (and ``SELF``) to entity ids within one transaction."""

    def __init__(
        self,
        ctx: Ctx,
        user_id: str | None,
        vectors: Mapping[tuple[str, str], Vectors],
        skip: SkipEntity,
    ) -> None:
        self.ctx = ctx
        self.user_id = user_id
        self.vectors = vectors
        self.skip = skip
        #: The user's entity id once looked up (naming the user forgets it).
        self._self_id: str | None = None

    def entity(self, name: str, type_: str, description: str, confidence: float) -> str | None:
        if self.skip(EntityCandidate(name=name, type=type_, description=description)):
            return None
        mirror = self.ctx.store.graph(self.ctx.workspace)
        known = mirror.find(name, type_)
        if known is not None and (not description or mirror.graph.nodes[known]["description"]):
            return known  # nothing to add to it: no SQL at all
        added = add_entity(
            self.ctx,
            name,
            type_,
            description or None,
            None,
            self.vectors.get((name, type_)),
            source_stage="extraction",
            confidence=confidence,
            candidates=False,
        )
        return added.id

    def self_id(self) -> str:
        """The user's entity, created as a placeholder when no name is known yet."""
        if self._self_id is not None:
            return self._self_id
        row = _self_row(self.ctx, self.user_id)
        if row is not None:
            self._self_id = str(row.id)
            return self._self_id
        entity_id = self._user_entity(self.user_id or ANONYMOUS_USER)
        self._bind(entity_id, named=False)
        self._self_id = entity_id
        return entity_id

    def name_user(self, name: str) -> None:
        """A message stated the user's name: the user's entity becomes (or is) that entity."""
        self._self_id = None
        row = _self_row(self.ctx, self.user_id)
        if row is not None and row.named:
            return  # the first stated name stays; a different one is just another person
        named_id = self.ctx.store.graph(self.ctx.workspace).find(name, "person")
        if row is None:
            self._bind(named_id or self._user_entity(name), named=True)
        elif named_id is not None and named_id != row.id:
            merge_entities(self.ctx, str(row.id), named_id)
            self._bind(named_id, named=True)
        else:
            update_entity(self.ctx, str(row.id), name, None, self._vector_for(name, row.id))
            self._bind(str(row.id), named=True)

    def _user_entity(self, name: str) -> str:
        """The person entity ``name`` resolves to, created when new. No skip rule applies:
        whatever the user is called, the user is never a meta entity."""
        return add_entity(
            self.ctx,
            name,
            "person",
            USER_DESCRIPTION,
            None,
            self.vectors.get((name, "person")),
            source_stage="extraction",
            candidates=False,
        ).id

    def _vector_for(self, name: str, entity_id: str) -> Vectors | None:
        vectors = self.ctx.vectors
        if vectors is None:
            return None
        description = entity_row(self.ctx, entity_id).description
        return vectors.embedder.embed([entity_text(name, description)])

    def _bind(self, entity_id: str, *, named: bool) -> None:
        pk = entity_row(self.ctx, entity_id).pk
        conn = self.ctx.conn
        key = {"workspace": self.ctx.workspace, "user_id": _user_key(self.user_id)}
        updated = conn.execute(
            update(ue)
            .where(ue.c.workspace == key["workspace"], ue.c.user_id == key["user_id"])
            .values(entity_pk=pk, named=int(named))
        )
        if updated.rowcount == 0:
            conn.execute(insert(ue).values(**key, entity_pk=pk, named=int(named)))


def apply_extractions(
    ctx: Ctx,
    user_id: str | None,
    results: Sequence[MessageExtraction],
    vectors: Mapping[tuple[str, str], Vectors],
    skip_entity: SkipEntity | None,
) -> None:
    """Write what was extracted from each message."""
    binder = _Binder(ctx, user_id, vectors, skip_entity or is_meta_entity)
    stamp = now()
    for result in results:
        message, found = result.message, result.extraction
        if found is None:
            _finish(ctx, message.pk, "failed", stamp, result.error)
            continue
        if found.user_name:
            binder.name_user(found.user_name)
        ids: dict[str, str] = {}
        for entity in found.entities:
            entity_id = binder.entity(
                entity.name, entity.type, entity.description, entity.confidence
            )
            if entity_id is not None:
                ids[entity.name] = entity_id
        for rel in found.relationships:
            source = binder.self_id() if rel.source == SELF else ids.get(rel.source)
            target = binder.self_id() if rel.target == SELF else ids.get(rel.target)
            if source is None or target is None or source == target:
                continue  # an endpoint was skipped by the guard, or a self-loop
            # Fetched each time: naming the user may merge entities, which rebuilds it.
            mirror = ctx.store.graph(ctx.workspace)
            edges = mirror.graph.get_edge_data(source, target) or {}
            if any(data["type"] == rel.type for data in edges.values()):
                continue  # known already; the first statement keeps its provenance
            add_relationship(
                ctx, source, target, rel.type, {"source": "extraction"}, rel.confidence
            )
        linked = set(ids.values())
        if any(SELF in (r.source, r.target) for r in found.relationships):
            linked.add(binder.self_id())
        if linked:
            pks = ctx.conn.execute(select(e.c.pk).where(e.c.id.in_(linked))).scalars().all()
            ctx.conn.execute(
                insert(s.entity_mentions).prefix_with("OR IGNORE"),
                [{"entity_pk": pk, "message_pk": message.pk} for pk in pks],
            )
        _finish(ctx, message.pk, "done", stamp, None)


def apply_then_due(
    ctx: Ctx,
    conversation_id: str,
    user_id: str | None,
    results: Sequence[MessageExtraction],
    vectors: Mapping[tuple[str, str], Vectors],
    skip_entity: SkipEntity | None,
    every: int | None,
) -> list[list[PendingMessage]]:
    """``apply_extractions``, then (with ``every``) the observations now due — one trip."""
    apply_extractions(ctx, user_id, results, vectors, skip_entity)
    return due_observations(ctx, conversation_id, every) if every else []


def _finish(ctx: Ctx, message_pk: int, status: str, stamp: str, error: str | None) -> None:
    ctx.conn.execute(
        update(xu)
        .where(xu.c.message_pk == message_pk)
        .values(status=status, attempts=xu.c.attempts + 1, last_run=stamp, error=error)
    )


# -- observations and reflections ---------------------------------------------------------
def _last_covered_pk(ctx: Ctx, conversation_pk: int) -> int:
    """The newest message an observation of the conversation already covers (0: none)."""
    latest = ctx.conn.execute(
        select(o.c.source_msg_ids)
        .where(o.c.conversation_pk == conversation_pk)
        .order_by(o.c.pk.desc())
        .limit(1)
    ).scalar()
    ids = json.loads(latest) if latest else []
    if not ids:
        return 0
    pk = ctx.conn.execute(select(func.max(m.c.pk)).where(m.c.id.in_(ids))).scalar()
    return int(pk or 0)


def due_observations(ctx: Ctx, conversation_id: str, every: int) -> list[list[PendingMessage]]:
    """Each next run of ``every`` messages no observation covers yet (whole runs only)."""
    conv = conversation_row(ctx, conversation_id)
    rows = ctx.conn.execute(
        select(m.c.pk, m.c.id, m.c.role, m.c.content)
        .where(
            m.c.conversation_pk == conv.pk,
            m.c.pk > _last_covered_pk(ctx, conv.pk),
            m.c.role.in_(EXTRACTED_ROLES),
        )
        .order_by(m.c.pk)
    ).all()
    messages = [PendingMessage(r.pk, r.id, r.role, r.content) for r in rows]
    whole = len(messages) - len(messages) % every
    return [messages[i : i + every] for i in range(0, whole, every)]


def add_observations(
    ctx: Ctx, conversation_id: str, written: Sequence[tuple[str, Sequence[PendingMessage]]]
) -> None:
    """Write ``(content, the messages it covers)`` observations, oldest first."""
    conv = conversation_row(ctx, conversation_id)
    stamp = now()
    insert_rows(
        ctx.conn,
        o,
        [
            {
                "id": new_id(),
                "workspace": ctx.workspace,
                "conversation_pk": conv.pk,
                "content": content,
                "source_msg_ids": dumps([msg.id for msg in messages]),
                "created_at": stamp,
            }
            for content, messages in written
        ],
    )


@dataclass(frozen=True, slots=True)
class DueReflection:
    observation_ids: list[str]
    observations: list[str]
    previous_id: str | None
    previous: str | None


def due_reflection(ctx: Ctx, conversation_id: str, every: int) -> DueReflection | None:
    """The observations since the current reflection, when there are ``every`` of them."""
    conv = conversation_row(ctx, conversation_id)
    current = ctx.conn.execute(
        select(rf.c.id, rf.c.content, rf.c.source_obs_ids)
        .where(rf.c.conversation_pk == conv.pk, rf.c.superseded_by_id.is_(None))
        .order_by(rf.c.pk.desc())
        .limit(1)
    ).first()
    after = 0
    if current is not None:
        covered = json.loads(current.source_obs_ids) or []
        if covered:
            after = int(
                ctx.conn.execute(select(func.max(o.c.pk)).where(o.c.id.in_(covered))).scalar() or 0
            )
    rows = ctx.conn.execute(
        select(o.c.id, o.c.content)
        .where(o.c.conversation_pk == conv.pk, o.c.pk > after)
        .order_by(o.c.pk)
        .limit(every)
    ).all()
    if len(rows) < every:
        return None
    return DueReflection(
        observation_ids=[r.id for r in rows],
        observations=[r.content for r in rows],
        previous_id=current.id if current is not None else None,
        previous=current.content if current is not None else None,
    )


def add_reflection(ctx: Ctx, conversation_id: str, content: str, due: DueReflection) -> str:
    """Write the reflection; the one it replaces gets ``superseded_by_id``."""
    conv = conversation_row(ctx, conversation_id)
    reflection_id = new_id()
    ctx.conn.execute(
        insert(rf).values(
            id=reflection_id,
            workspace=ctx.workspace,
            conversation_pk=conv.pk,
            content=content,
            source_obs_ids=dumps(due.observation_ids),
            created_at=now(),
        )
    )
    if due.previous_id is not None:
        ctx.conn.execute(
            update(rf).where(rf.c.id == due.previous_id).values(superseded_by_id=reflection_id)
        )
    return reflection_id
