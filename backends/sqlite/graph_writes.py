"""Extraction results into the graph: units of work the pipeline runs on the writer thread.

``pipeline.py`` runs the extractor (which may be a model, so it is async and runs outside
any transaction) and then hands what it found to :func:`apply_extractions`, which in one
transaction resolves names to entities (reusing existing ones, see ``resolution.py``),
binds the speaking user, writes relationships by the validity rules (``validity.py``:
an identical open edge is reused, a changed fact closes the old edge, date phrases are
resolved against the message's day) and mentions, and marks each message's extraction
unit ``done`` or ``failed``. A unit that is no longer ``pending`` (another worker
finished it first) is left alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from nams_local.extraction import (
    SELF,
    USER_DESCRIPTION,
    EntityCandidate,
    Extraction,
    SkipEntity,
    is_meta_entity,
)
from nams_local.extraction.dates import resolve_date
from nams_local.validation import MAX_ENTITY_NAME_CHARS

from . import dbapi
from . import schema as s
from .entities import (
    active_entity,
    entity_row,
    merge_entities,
    put_entity,
    put_relationship,
    update_entity,
)
from .rows import now
from .store import Ctx, entity_text
from .summaries import PendingMessage, due_observations
from .validity import Fact
from .vectors import Vectors

__all__ = [
    "ANONYMOUS_USER",
    "MessageExtraction",
    "apply_extractions",
    "apply_then_due",
    "new_entity_names",
    "user_name",
]

#: Name of a user's person entity until a message states the name, when it has no id.
ANONYMOUS_USER = "User"

xu, e, ue, m = s.extraction_units, s.entities, s.user_entities, s.messages


@dataclass(frozen=True, slots=True)
class MessageExtraction:
    """What the extractor made of one message, or the error it raised."""

    message: PendingMessage
    extraction: Extraction | None
    error: str | None = None


def _user_key(user_id: str | None) -> str:
    return user_id or ""


def _self_row(ctx: Ctx, user_id: str | None) -> Any:
    """The user's entity binding, following merges to the live entity."""
    key = (ctx.workspace, _user_key(user_id))
    row = dbapi.fetch_one(ctx.conn, _SELF, key)
    if row is not None and row.merged_into_pk is not None:
        dbapi.execute(ctx.conn, _REBIND, (row.merged_into_pk, *key))
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
        #: Rows of relationship ends looked up in this unit (naming the user, which may
        #: merge entities, forgets them): a batch restates the same few entities.
        self._ends: dict[str, Any] = {}

    def end(self, entity_id: str, role: str) -> Any:
        """The row of an entity a relationship of this batch ends at."""
        row = self._ends.get(entity_id)
        if row is None:
            row = self._ends[entity_id] = active_entity(self.ctx, entity_id, role)
        return row

    def entity(self, name: str, type_: str, description: str, confidence: float) -> str | None:
        if len(name) > MAX_ENTITY_NAME_CHARS or self.skip(
            EntityCandidate(name=name, type=type_, description=description)
        ):
            return None  # an extracted "name" longer than any name is not one
        mirror = self.ctx.store.graph(self.ctx.workspace)
        known = mirror.find(name, type_)
        if known is not None and (not description or mirror.graph.nodes[known]["description"]):
            return known  # nothing to add to it: no SQL at all
        return put_entity(
            self.ctx,
            name,
            type_,
            description or None,
            self.vectors.get((name, type_)),
            source_stage="extraction",
            confidence=confidence,
        )

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
        self._ends.clear()
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
        return put_entity(
            self.ctx,
            name,
            "person",
            USER_DESCRIPTION,
            self.vectors.get((name, "person")),
            source_stage="extraction",
        )

    def _vector_for(self, name: str, entity_id: str) -> Vectors | None:
        vectors = self.ctx.vectors
        if vectors is None:
            return None
        description = entity_row(self.ctx, entity_id).description
        return vectors.embedder.embed([entity_text(name, description)])

    def _bind(self, entity_id: str, *, named: bool) -> None:
        pk = entity_row(self.ctx, entity_id).pk
        conn = self.ctx.conn
        key = (self.ctx.workspace, _user_key(self.user_id))
        updated = dbapi.execute(conn, _BIND, (pk, int(named), *key))
        if updated.rowcount == 0:
            dbapi.execute(conn, _INSERT_BINDING, (*key, pk, int(named)))


def apply_extractions(
    ctx: Ctx,
    user_id: str | None,
    results: Sequence[MessageExtraction],
    vectors: Mapping[tuple[str, str], Vectors],
    skip_entity: SkipEntity | None,
) -> None:
    """Write what was extracted from each message (still ``pending`` ones only)."""
    binder = _Binder(ctx, user_id, vectors, skip_entity or is_meta_entity)
    stamp = now()
    pks = [r.message.pk for r in results]
    # The units still pending, with the day each message was written (what its date
    # phrases are resolved against): one statement for the whole batch.
    still = {
        int(pk): str(created_at or stamp)[:10]
        for pk, created_at in dbapi.raw_connection(ctx.conn).execute(
            _STILL_PENDING.format(marks=", ".join("?" * len(pks))), pks
        )
    }
    for result in results:
        if result.message.pk not in still:
            continue
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
        said_on = still[message.pk]
        # What holds first, then what ended: "I left X and joined Y in May" closes X at
        # May (Y supersedes it), and the ending then finds X closed already.
        for rel in sorted(found.relationships, key=lambda rel: rel.ended):
            source = binder.self_id() if rel.source == SELF else ids.get(rel.source)
            target = binder.self_id() if rel.target == SELF else ids.get(rel.target)
            if source is None or target is None or source == target:
                continue  # an endpoint was skipped by the guard, or a self-loop
            # An identical open edge is reused (the first statement keeps its provenance);
            # a single-valued type closes the previous one (``validity.py``).
            ends = binder.end(source, "source"), binder.end(target, "target")
            fact = Fact(
                ends[0].pk,
                ends[1].pk,
                rel.type,
                {"source": "extraction"},
                rel.confidence,
                valid_from=None if rel.ended else _resolved(rel.when, said_on),
                valid_until=_resolved(rel.when, said_on) if rel.ended else None,
                ended=rel.ended,
                source_message_id=message.id,
                said_on=said_on,
            )
            put_relationship(ctx, *ends, fact)
        linked = set(ids.values())
        if any(SELF in (r.source, r.target) for r in found.relationships):
            linked.add(binder.self_id())
        if linked:
            dbapi.execute(
                ctx.conn,
                _MENTIONS.format(marks=", ".join("?" * len(linked))),
                (message.pk, *linked),
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


def _resolved(phrase: str | None, said_on: str) -> str | None:
    return resolve_date(phrase, date.fromisoformat(said_on)) if phrase else None


def _finish(ctx: Ctx, message_pk: int, status: str, stamp: str, error: str | None) -> None:
    dbapi.execute(ctx.conn, _FINISH, (status, stamp, error, message_pk))


# Applying extractions runs on the writer every workspace shares, a few statements per
# message: on the DB-API cursor (``dbapi.py``) they cost a fraction of a Core statement's
# CPU, and a tenth of the same SQL through ``exec_driver_sql``'s result machinery.
_STILL_PENDING = (
    "SELECT xu.message_pk, m.created_at FROM extraction_units AS xu "
    "JOIN messages AS m ON m.pk = xu.message_pk "
    "WHERE xu.status = 'pending' AND xu.message_pk IN ({marks})"
)
_SELF = (
    "SELECT ue.entity_pk, ue.named, e.id, e.name, e.merged_into_pk FROM user_entities AS ue "
    "JOIN entities AS e ON e.pk = ue.entity_pk WHERE ue.workspace = ? AND ue.user_id = ?"
)
_REBIND = "UPDATE user_entities SET entity_pk = ? WHERE workspace = ? AND user_id = ?"
_BIND = "UPDATE user_entities SET entity_pk = ?, named = ? WHERE workspace = ? AND user_id = ?"
_INSERT_BINDING = (
    "INSERT INTO user_entities(workspace, user_id, entity_pk, named) VALUES (?, ?, ?, ?)"
)
_MENTIONS = (
    "INSERT OR IGNORE INTO entity_mentions(entity_pk, message_pk) "
    "SELECT pk, ? FROM entities WHERE id IN ({marks})"
)
_FINISH = (
    "UPDATE extraction_units SET status = ?, attempts = attempts + 1, last_run = ?, "
    "error = ? WHERE message_pk = ?"
)
