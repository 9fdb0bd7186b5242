"""Purging one user of a workspace: every trace in the rows, then in the file's bytes.

"Forget me" has to hold for someone who opens the database file with a hex editor, not
only for the API. So a purge is two steps:

1. ``purge_user`` — one unit of work on the writer (one transaction, ``secure_delete`` on,
   so freed cells are zeroed as they go): the user's conversations and everything that
   lives in them (messages, observations, reflections, reasoning steps and their tool
   calls, extraction state, queued vectors, legacy sessions), the full-text and vector
   entries of those messages, the legacy task traces of the user's sessions, the
   key/value items under a namespace naming the user, the relationships extracted from
   the user's messages, and the entities the user owns (below). The three FTS5 indexes
   are then merged (``optimize``): FTS5 keeps a deleted row's tokens in its old segments
   until a merge rewrites them.
2. ``compact`` — outside any transaction, on the writer thread (a barrier: every unit
   queued before it has committed, every unit after it waits): ``VACUUM`` rewrites the
   file without its free pages, then ``wal_checkpoint(TRUNCATE)`` copies the WAL back and
   cuts it to zero bytes, so no old page image survives in the ``-wal`` file either.

Which entities are the user's: an entity extraction created (``source_stage`` is
``extraction``; an entity written through the API belongs to the workspace) that the
user's messages mention and nothing else holds — no mention from any other message and no
relationship extracted from another message. The user's own person entity follows the
same rule (a person another user also talks about stays, unbound from the user), and so do
the inert entities merged into an owned one. The user's placeholder (the person entity
named after the user id until a message states a name) goes even when it was merged into
a shared entity. Explicit relationships (no source message) on an owned entity go with it.

A shared entity stays and loses the user's mentions (they go with the messages) and the
relationships the user's messages stated. A relationship another fact closed stays closed
when the closing fact is purged (the world changed; only the pointer to the purged fact,
``superseded_by``, is cleared).

Not the user's, so kept: legacy preferences and facts (the legacy model has no user on
them), tool calls recorded without a step, and everything of other workspaces.
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from concurrent.futures import Future
from typing import Any

from sqlalchemy import delete, func, select, text

from nams_local.errors import BackendUnavailableError
from nams_local.purge_report import PurgeReport

from . import schema as s
from .conversations import unindex_messages
from .dbapi import raw_connection
from .entities import unindex_entities
from .items import drop_items, ns_path
from .store import Ctx, SQLiteStore

__all__ = ["FTS_TABLES", "compact", "needs_compaction", "purge_user"]

#: Every FTS5 index of the schema (``schema.FTS_DDL``): each is merged after a purge.
FTS_TABLES = ("messages_fts", "entities_fts", "store_items_fts")

#: How many times a ``wal_checkpoint(TRUNCATE)`` that found readers is retried (each try
#: waits up to the connection's ``busy_timeout`` for them).
_CHECKPOINT_TRIES = 3

#: Temporary tables (the connection's temp schema, never the file) of what goes.
_MSGS = "nams_purge_messages"
_ENTS = "nams_purge_entities"

c, e = s.conversations, s.entities


def _count(ctx: Ctx, sql: str, **params: Any) -> int:
    return int(ctx.conn.execute(text(sql), params).scalar_one())


def _pks(ctx: Ctx, table: str) -> list[int]:
    return [int(pk) for (pk,) in ctx.conn.execute(text(f"SELECT pk FROM {table}"))]


def _mark_messages(ctx: Ctx, user_id: str) -> None:
    """The user's messages into ``_MSGS`` (pk and API id)."""
    conn = ctx.conn
    conn.execute(text(f"CREATE TEMP TABLE {_MSGS} (pk INTEGER PRIMARY KEY, id TEXT)"))
    conn.execute(
        text(
            f"INSERT INTO {_MSGS}(pk, id) SELECT m.pk, m.id FROM messages m "
            "JOIN conversations c ON c.pk = m.conversation_pk "
            "WHERE c.workspace = :w AND c.user_id = :u"
        ),
        {"w": ctx.workspace, "u": user_id},
    )


def _self_entities(ctx: Ctx, user_id: str) -> list[int]:
    """The user's person entity (following merges) and its placeholder, if any."""
    conn = ctx.conn
    bound = conn.execute(
        select(s.user_entities.c.entity_pk).where(
            s.user_entities.c.workspace == ctx.workspace, s.user_entities.c.user_id == user_id
        )
    ).scalar()
    found: list[int] = []
    pk = None if bound is None else int(bound)
    while pk is not None and pk not in found:  # a merged entity points at its target
        found.append(pk)
        target = conn.execute(select(e.c.merged_into_pk).where(e.c.pk == pk)).scalar()
        pk = None if target is None else int(target)
    return found


def _placeholders(ctx: Ctx, user_id: str) -> list[int]:
    """Inert person entities named after the user id that no message mentions any more:
    the user's placeholder after a stated name merged it into another entity."""
    rows = ctx.conn.execute(
        text(
            "SELECT pk FROM entities e WHERE workspace = :w AND type = 'person' "
            "AND source_stage = 'extraction' AND merged_into_pk IS NOT NULL AND name = :u "
            "AND NOT EXISTS (SELECT 1 FROM entity_mentions em WHERE em.entity_pk = e.pk)"
        ),
        {"w": ctx.workspace, "u": user_id},
    )
    return [int(pk) for (pk,) in rows]


def _mark_entities(ctx: Ctx, user_id: str) -> int:
    """The entities the user owns into ``_ENTS`` (module docstring); returns how many
    entities the user's messages mention that stay because something else holds them."""
    conn = ctx.conn
    conn.execute(text(f"CREATE TEMP TABLE {_ENTS} (pk INTEGER PRIMARY KEY)"))
    selves = _self_entities(ctx, user_id)
    candidates = "SELECT entity_pk AS pk FROM entity_mentions WHERE message_pk IN " + (
        f"(SELECT pk FROM {_MSGS})"
    )
    if selves:
        candidates += (
            " UNION SELECT pk FROM entities WHERE pk IN ("
            + ",".join(str(pk) for pk in selves)
            + ")"
        )
    owned_rule = (
        "e.workspace = :w AND e.source_stage = 'extraction' "
        "AND NOT EXISTS (SELECT 1 FROM entity_mentions em WHERE em.entity_pk = e.pk "
        f"  AND em.message_pk NOT IN (SELECT pk FROM {_MSGS})) "
        "AND NOT EXISTS (SELECT 1 FROM relationships x "
        "  WHERE (x.source_pk = e.pk OR x.target_pk = e.pk) AND x.source_message_id IS NOT NULL "
        f"  AND x.source_message_id NOT IN (SELECT id FROM {_MSGS}))"
    )
    params = {"w": ctx.workspace}
    conn.execute(
        text(
            f"INSERT OR IGNORE INTO {_ENTS}(pk) SELECT e.pk FROM entities e "
            f"WHERE e.pk IN ({candidates}) AND {owned_rule}"
        ),
        params,
    )
    total = _count(ctx, f"SELECT count(*) FROM ({candidates})")
    owned = _count(ctx, f"SELECT count(*) FROM {_ENTS}")
    for pk in _placeholders(ctx, user_id):
        conn.execute(text(f"INSERT OR IGNORE INTO {_ENTS}(pk) VALUES (:pk)"), {"pk": pk})
    # Inert entities merged into an owned one hold nothing but its past names.
    conn.execute(
        text(
            f"INSERT OR IGNORE INTO {_ENTS}(pk) SELECT pk FROM entities "
            f"WHERE merged_into_pk IN (SELECT pk FROM {_ENTS})"
        )
    )
    return total - owned


def _legacy_traces(ctx: Ctx, user_id: str) -> int:
    """Delete the legacy task traces of the user's sessions (steps and tool calls follow
    by cascade): a trace names its session by the session's name or, for a session made
    by ``create_session_conversation``, by the conversation id. The sessions themselves
    go with their conversations."""
    mine = (c.c.workspace == ctx.workspace) & (c.c.user_id == user_id)
    named = (
        select(s.sessions.c.session_id).join(c, c.c.pk == s.sessions.c.conversation_pk).where(mine)
    )
    t = s.traces
    result = ctx.conn.execute(
        delete(t).where(
            t.c.workspace == ctx.workspace,
            t.c.session_id.in_(named.union(select(c.c.id).where(mine))),
        )
    )
    return int(result.rowcount)


def _user_items(ctx: Ctx, user_id: str) -> int:
    """Delete the key/value items whose namespace has a label equal to the user id
    (``("memories", "<user>")``, LangGraph's convention), with their full-text entries."""
    label = "," + ns_path([user_id])
    rows = ctx.conn.execute(
        select(s.store_items.c.pk).where(
            s.store_items.c.workspace == ctx.workspace,
            func.instr("," + s.store_items.c.ns_path, label) > 0,
        )
    )
    pks = [int(pk) for (pk,) in rows]
    drop_items(ctx, pks)
    return len(pks)


def _in_conversations(table: str, user_conversations: str) -> str:
    return f"SELECT count(*) FROM {table} WHERE conversation_pk IN ({user_conversations})"


def purge_user(ctx: Ctx, user_id: str) -> PurgeReport:
    """Delete every trace of ``user_id`` in this workspace (see the module docstring) and
    merge the full-text indexes. One transaction: a failure deletes nothing."""
    raw = raw_connection(ctx.conn)
    before = int(raw.execute("PRAGMA secure_delete").fetchone()[0])
    raw.execute("PRAGMA secure_delete=ON")
    try:
        return _purge(ctx, user_id)
    finally:
        raw.execute(f"PRAGMA secure_delete={before}")
        for table in (_MSGS, _ENTS):
            ctx.conn.execute(text(f"DROP TABLE IF EXISTS temp.{table}"))


def _purge(ctx: Ctx, user_id: str) -> PurgeReport:
    conn, ws = ctx.conn, ctx.workspace
    user_conversations = "SELECT pk FROM conversations WHERE workspace = :w AND user_id = :u"
    who = {"w": ws, "u": user_id}
    deleted: dict[str, int] = {
        "conversations": _count(ctx, f"SELECT count(*) FROM ({user_conversations})", **who),
        "observations": _count(ctx, _in_conversations("observations", user_conversations), **who),
        "reflections": _count(ctx, _in_conversations("reflections", user_conversations), **who),
        "reasoning_steps": _count(ctx, _in_conversations("steps", user_conversations), **who),
        "tool_calls": _count(
            ctx,
            "SELECT count(*) FROM tool_calls WHERE step_pk IN (SELECT pk FROM steps "
            f"WHERE conversation_pk IN ({user_conversations}))",
            **who,
        ),
        "sessions": _count(ctx, _in_conversations("sessions", user_conversations), **who),
    }
    deleted["traces"] = _legacy_traces(ctx, user_id)
    _mark_messages(ctx, user_id)
    deleted["messages"] = _count(ctx, f"SELECT count(*) FROM {_MSGS}")
    deleted["mentions"] = _count(
        ctx, f"SELECT count(*) FROM entity_mentions WHERE message_pk IN (SELECT pk FROM {_MSGS})"
    )
    shared = _mark_entities(ctx, user_id)
    entity_pks = _pks(ctx, _ENTS)
    deleted["entities"] = len(entity_pks)
    # Relationships the user's messages stated, and every one on an owned entity.
    doomed = (
        f"source_message_id IN (SELECT id FROM {_MSGS}) "
        f"OR source_pk IN (SELECT pk FROM {_ENTS}) OR target_pk IN (SELECT pk FROM {_ENTS})"
    )
    conn.execute(
        text(
            "UPDATE relationships SET superseded_by = NULL WHERE superseded_by IN "
            f"(SELECT id FROM relationships WHERE {doomed})"
        )
    )
    deleted["relationships"] = int(
        conn.execute(text(f"DELETE FROM relationships WHERE {doomed}")).rowcount
    )
    unindex_messages(ctx, _pks(ctx, _MSGS))
    unindex_entities(ctx, entity_pks)
    owned = f"pk IN (SELECT pk FROM {_ENTS})"
    conn.execute(text(f"UPDATE entities SET merged_into_pk = NULL WHERE {owned}"))
    conn.execute(text(f"DELETE FROM entities WHERE {owned}"))
    ue = s.user_entities
    conn.execute(delete(ue).where(ue.c.workspace == ws, ue.c.user_id == user_id))
    conn.execute(delete(c).where(c.c.workspace == ws, c.c.user_id == user_id))
    deleted["items"] = _user_items(ctx, user_id)
    for table in FTS_TABLES:
        conn.execute(text(f"INSERT INTO {table}({table}) VALUES ('optimize')"))
    ctx.store.drop_graph(ws)
    return PurgeReport(user_id=user_id, deleted=deleted, kept_shared_entities=shared)


def _vacuum(store: SQLiteStore) -> float:
    """VACUUM, then truncate the WAL: on the writer thread, outside every transaction.
    Returns the seconds it took."""
    started = time.perf_counter()
    raw = raw_connection(store.conn)
    if raw.in_transaction:  # pragma: no cover - the writer commits every unit it runs
        raw.commit()
    try:
        raw.execute("VACUUM")
        for _ in range(_CHECKPOINT_TRIES):
            busy, _log, _done = raw.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if not busy:
                break
        else:
            raise BackendUnavailableError(
                "the purge deleted the user, but other readers kept the write-ahead log busy, "
                "so it still holds old pages; run the purge again once they are done"
            )
    except BaseException:
        with _LOCK:
            _UNFINISHED.add(store)  # the next purge compacts even if it deletes nothing
        raise
    with _LOCK:
        _UNFINISHED.discard(store)
    return time.perf_counter() - started


#: The compaction queued on each store's writer and not started yet: a purge that
#: finishes meanwhile shares it (its deletes committed before it starts), so purges that
#: arrive together cost one VACUUM, not one each. Guarded by ``_LOCK`` (any thread).
_QUEUED: weakref.WeakKeyDictionary[SQLiteStore, Future[float]] = weakref.WeakKeyDictionary()
#: Stores whose last compaction failed: their file may still hold purged text.
_UNFINISHED: weakref.WeakSet[SQLiteStore] = weakref.WeakSet()
_LOCK = threading.Lock()


def needs_compaction(store: SQLiteStore, report: PurgeReport) -> bool:
    """A file store compacts after a purge that deleted something, or when the last
    compaction failed. A purge that found nothing skips it: nothing new to scrub, and a
    caller repeating purges cannot make the writer VACUUM over and over."""
    if store.path == ":memory:":
        return False
    with _LOCK:
        unfinished = store in _UNFINISHED
    return unfinished or any(report.deleted.values())


async def compact(store: SQLiteStore) -> float:
    """Rewrite the file so deleted text is gone from its bytes (module docstring); returns
    the seconds the VACUUM took. A writer barrier: every workspace's writes wait for it."""
    with _LOCK:
        queued = _QUEUED.get(store)
        if queued is None or queued.running() or queued.done():
            queued = _QUEUED[store] = store.writer.call(_vacuum, store)
    return await asyncio.wrap_future(queued)
