"""Facts that change: relationships with validity in time, and supersession on write.

A relationship holds from ``valid_from`` until ``valid_until`` (world time, ISO dates as
precise as what was said; see ``nams_local.extraction.dates``); ``created_at`` is when we
learned it and ``invalidated_at`` when we learned it stopped. Nothing is deleted when a
fact changes: the old edge is closed, so "where did I live before?" still has an answer.

The rules (deterministic, no model), for every write path alike (extraction, explicit
``add_relationship``, tools-mode graph extraction, LLM extraction output):

- An identical edge (same ends, same type) that is still open is reused, never doubled.
  A closed one is not revived: moving back opens a new interval.
- A **single-valued** type (``Supersession.single_valued``: lives in, works at, married
  to …) has one open edge per subject: a new object closes the subject's open edge of the
  same type and direction (``valid_until`` = the new edge's ``valid_from``,
  ``superseded_by`` = the new edge). Symmetric ties (married to, partner of) close the
  tie of either end. Multi-valued types (knows, uses) never close on their own.
- Statements arrive out of order: edges are ordered by ``valid_from`` (``created_at``
  when not stated), not by arrival. An older statement slots in before the newer edge
  (it is closed at once, superseded by it) and cuts an interval it falls inside.
- An **ended** fact ("I no longer work at X", "I left X", "my ex-wife Z") closes the open
  edge; with none open, it records a closed one (the past is still knowledge).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Row, select, update

from nams_local.errors import InvalidInputError, NotFoundError

from . import dbapi
from . import schema as s
from .edge_identity import enrich_edge
from .rows import dumps, new_id, now
from .store import Ctx
from .validity_rules import Supersession, type_key

__all__ = ["Fact", "invalidate", "write_fact"]

r = s.relationships


@dataclass(frozen=True, slots=True)
class Fact:
    """One relationship to write, with what is known of its time."""

    source_pk: int
    target_pk: int
    type: str
    properties: dict[str, Any]
    confidence: float | None
    #: Stated dates (ISO, partial); ``None``: not stated.
    valid_from: str | None = None
    valid_until: str | None = None
    #: The statement says the fact no longer holds.
    ended: bool = False
    #: ``False``: write as is, close nothing (the ``supersede`` opt-out of explicit writes).
    supersede: bool = True
    source_message_id: str | None = None
    #: The date the statement was made (the message's day); orders facts with no date.
    said_on: str | None = None


def _key(row: Row[Any]) -> str:
    """Where an edge starts on the time line: its ``valid_from``; an edge whose start
    nobody stated sorts before every dated one (it held "since whenever")."""
    return str(row.valid_from or "")


def _same_pair(row: Row[Any], fact: Fact, symmetric: bool) -> bool:
    if row.source_pk == fact.source_pk and row.target_pk == fact.target_pk:
        return True
    return symmetric and row.source_pk == fact.target_pk and row.target_pk == fact.source_pk


def _related(ctx: Ctx, fact: Fact, symmetric: bool) -> list[Row[Any]]:
    """The edges of the fact's type that its subject holds (either end when symmetric)."""
    if symmetric:
        ends = (fact.source_pk, fact.target_pk)
        rows = dbapi.fetch_all(ctx.conn, _RELATED_SYMMETRIC, (ctx.workspace, *ends, *ends))
    else:
        rows = dbapi.fetch_all(ctx.conn, _RELATED, (ctx.workspace, fact.source_pk))
    wanted = type_key(fact.type)
    return [row for row in rows if type_key(row.type) == wanted]


def write_fact(ctx: Ctx, fact: Fact, rules: Supersession) -> tuple[str, list[str]]:
    """Write ``fact`` by the rules above: ``(its edge id, ids of every edge changed)``.

    The edge id is that of the reused edge when an identical open one exists.
    """
    if fact.valid_from and fact.valid_until and fact.valid_until < fact.valid_from:
        raise InvalidInputError("validUntil must not be before validFrom")
    if not rules.enabled:
        return _insert(ctx, fact, fact.valid_from, fact.valid_until, None), []
    symmetric = type_key(fact.type) in rules.symmetric
    rows = _related(ctx, fact, symmetric)
    same = [row for row in rows if _same_pair(row, fact, symmetric)]
    same_open = [row for row in same if row.valid_until is None]
    stamp = now()
    if fact.ended or (fact.valid_until is not None and fact.valid_from is None and same_open):
        # An edge "held until X" that is open here: the statement that it ended.
        successors = [
            _key(row)
            for row in rows
            if row.valid_until is None and not _same_pair(row, fact, symmetric)
        ]
        # "I no longer work at X" beside a current job at Y since May: X ended in May.
        follows = min(successors) if successors and rules.single(fact.type) else None
        return _end(ctx, fact, same, same_open, stamp, follows)
    if same_open:
        kept = same_open[0]
        changed = enrich_edge(ctx, kept, dict(fact.properties), fact.confidence)
        return str(kept.id), [str(kept.id)] if changed else []
    # "I left X" told before "I joined X in 2022": the closed edge gains its start.
    undated = [
        row
        for row in same
        if row.valid_from is None and fact.valid_from and row.valid_until > fact.valid_from
    ]
    if undated and fact.valid_from is not None:
        row = undated[-1]
        ctx.conn.execute(update(r).where(r.c.pk == row.pk).values(valid_from=fact.valid_from))
        cut = []
        if fact.supersede and rules.single(fact.type):
            cut = _running(rows, fact, symmetric, fact.valid_from)
            for other in cut:
                _close(ctx, other.pk, fact.valid_from, stamp, str(row.id))
        return str(row.id), [str(row.id), *(str(other.id) for other in cut)]
    start = fact.valid_from
    if fact.valid_until is not None or not fact.supersede or not rules.single(fact.type):
        return _insert(ctx, fact, start, fact.valid_until, None), []
    # Undated, the change happened by the day it was said.
    at = start or fact.said_on or stamp[:10]
    others = [row for row in rows if not _same_pair(row, fact, symmetric)]
    later = [row for row in others if _key(row) > at]
    following = min(later, key=_key) if later else None
    until = _key(following) if following is not None else None
    # Every interval still running at ``at`` ends there: the subject moved on.
    running = _running(rows, fact, symmetric, at)
    if running and start is None:
        start = at  # it replaced something: it started when the old one stopped
    rel_id = _insert(ctx, fact, start, until, following.id if following is not None else None)
    for row in running:
        _close(ctx, row.pk, at, stamp, rel_id)
    return rel_id, [rel_id, *(str(row.id) for row in running)]


def _running(rows: Sequence[Row[Any]], fact: Fact, symmetric: bool, at: str) -> list[Row[Any]]:
    """The subject's other edges still running at ``at`` (a closed edge whose start
    nobody stated cannot be shown to run then)."""
    return [
        row
        for row in rows
        if not _same_pair(row, fact, symmetric)
        and _key(row) <= at
        and (row.valid_until is None or (row.valid_from is not None and row.valid_until > at))
    ]


def _end(
    ctx: Ctx,
    fact: Fact,
    same: Sequence[Row[Any]],
    same_open: Sequence[Row[Any]],
    stamp: str,
    follows: str | None,
) -> tuple[str, list[str]]:
    stated = fact.valid_until or fact.valid_from
    until = stated or fact.said_on or stamp[:10]
    if not stated and follows is not None:
        until = min(until, follows)
    if same_open:
        for row in same_open:
            _close(ctx, row.pk, max(until, _key(row)), stamp, None)
        return str(same_open[0].id), [str(row.id) for row in same_open]
    if same:
        latest = max(same, key=_key)
        if stated and latest.valid_until != stated and stated >= _key(latest):
            _close(ctx, latest.pk, stated, stamp, latest.superseded_by)
            return str(latest.id), [str(latest.id)]
        return str(latest.id), []
    return _insert(ctx, fact, None, until, None, invalidated=stamp), []


def _insert(
    ctx: Ctx,
    fact: Fact,
    valid_from: str | None,
    valid_until: str | None,
    superseded_by: str | None,
    invalidated: str | None = None,
) -> str:
    rel_id = new_id()
    stamp = now()
    closed = valid_until is not None
    dbapi.execute(
        ctx.conn,
        _INSERT,
        (
            rel_id,
            ctx.workspace,
            fact.source_pk,
            fact.target_pk,
            fact.type,
            dumps(fact.properties),
            fact.confidence,
            stamp,
            valid_from,
            valid_until,
            (invalidated or stamp) if closed else None,
            superseded_by,
            fact.source_message_id,
        ),
    )
    return rel_id


# Every extracted relationship runs ``_related`` and usually ``_insert`` on the writer:
# DB-API SQL (``dbapi.py``), not Core statements built per call.
_RELATED = "SELECT * FROM relationships WHERE workspace = ? AND source_pk = ? ORDER BY pk"
_RELATED_SYMMETRIC = (
    "SELECT * FROM relationships WHERE workspace = ? "
    "AND (source_pk IN (?, ?) OR target_pk IN (?, ?)) ORDER BY pk"
)
_INSERT = (
    "INSERT INTO relationships(id, workspace, source_pk, target_pk, type, properties, "
    "confidence, created_at, valid_from, valid_until, invalidated_at, superseded_by, "
    "source_message_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _close(ctx: Ctx, pk: int, until: str, stamp: str, by: str | None) -> None:
    ctx.conn.execute(
        update(r)
        .where(r.c.pk == pk)
        .values(valid_until=until, invalidated_at=stamp, superseded_by=by)
    )


def invalidate(ctx: Ctx, relationship_id: str, valid_until: str | None) -> Row[Any]:
    """Close an edge explicitly ("that is no longer true"), from ``valid_until`` or today.

    Closing a closed edge again only moves its end; the row is returned either way.
    """
    row = ctx.conn.execute(
        select(r).where(r.c.id == relationship_id, r.c.workspace == ctx.workspace)
    ).first()
    if row is None:
        raise NotFoundError(f"relationship {relationship_id!r} not found")
    stamp = now()
    until = valid_until or stamp[:10]
    if until < _key(row) and row.valid_from is not None:
        raise InvalidInputError("validUntil must not be before the relationship's validFrom")
    _close(ctx, row.pk, until, stamp, row.superseded_by)
    return ctx.conn.execute(select(r).where(r.c.pk == row.pk)).one()
