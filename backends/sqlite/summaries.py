"""Observation and reflection bookkeeping: which messages an observation is due for, and
writing observations and reflections (a reflection supersedes the current one).

The summariser itself (possibly a model) runs in ``pipeline.py``, outside any transaction;
these are the units of work before and after it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import insert, update

from . import dbapi
from . import schema as s
from .conversations import EXTRACTED_ROLES, conversation_row
from .rows import dumps, insert_rows, new_id, now
from .store import Ctx

__all__ = [
    "DueReflection",
    "PendingMessage",
    "add_observations",
    "add_reflection",
    "due_observations",
    "due_reflection",
]

m, o, rf = s.messages, s.observations, s.reflections


@dataclass(frozen=True, slots=True)
class PendingMessage:
    pk: int
    id: str
    role: str
    content: str


# ``due_observations`` runs after every applied extraction batch, on the writer: DB-API
# SQL (``dbapi.py``), two statements. The first finds the conversation by its API id and
# the messages its newest observation covers; the second the messages after those.
_LATEST_OBSERVED = (
    "SELECT c.pk, (SELECT o.source_msg_ids FROM observations AS o "
    "WHERE o.conversation_pk = c.pk ORDER BY o.pk DESC LIMIT 1) "
    "FROM conversations AS c WHERE c.id = ? AND c.workspace = ?"
)
_UNCOVERED = (
    "SELECT pk, id, role, content FROM messages WHERE conversation_pk = ? "
    f"AND role IN ({', '.join(repr(role) for role in EXTRACTED_ROLES)}) "
    "AND pk > coalesce((SELECT max(pk) FROM messages WHERE id IN ({marks})), 0) ORDER BY pk"
)


def due_observations(ctx: Ctx, conversation_id: str, every: int) -> list[list[PendingMessage]]:
    """Each next run of ``every`` messages no observation covers yet (whole runs only);
    none for a conversation that does not exist (any more)."""
    found = dbapi.fetch_one(ctx.conn, _LATEST_OBSERVED, (conversation_id, ctx.workspace))
    if found is None:
        return []
    conv_pk, covered_json = found
    covered: list[str] = json.loads(covered_json) if covered_json else []
    sql = _UNCOVERED.format(marks=", ".join("?" * len(covered)) or "NULL")
    rows = dbapi.raw_connection(ctx.conn).execute(sql, (conv_pk, *covered)).fetchall()
    messages = [PendingMessage(*row) for row in rows]
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


# ``due_reflection`` runs after every observation written (DB-API SQL, as above).
_CURRENT_REFLECTION = (
    "SELECT id, content, source_obs_ids FROM reflections "
    "WHERE conversation_pk = ? AND superseded_by_id IS NULL ORDER BY pk DESC LIMIT 1"
)
_NEWEST_OBSERVATION_OF = "SELECT max(pk) FROM observations WHERE id IN ({marks})"
_OBSERVATIONS_AFTER = (
    "SELECT id, content FROM observations WHERE conversation_pk = ? AND pk > ? ORDER BY pk LIMIT ?"
)


def due_reflection(ctx: Ctx, conversation_id: str, every: int) -> DueReflection | None:
    """The observations since the current reflection, when there are ``every`` of them."""
    conv = conversation_row(ctx, conversation_id)
    current = dbapi.fetch_one(ctx.conn, _CURRENT_REFLECTION, (conv.pk,))
    after = 0
    if current is not None:
        covered = json.loads(current.source_obs_ids) or []
        if covered:
            marks = ", ".join("?" * len(covered))
            newest = dbapi.fetch_one(ctx.conn, _NEWEST_OBSERVATION_OF.format(marks=marks), covered)
            after = int((newest[0] if newest is not None else None) or 0)
    rows = dbapi.fetch_all(ctx.conn, _OBSERVATIONS_AFTER, (conv.pk, after, every))
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
