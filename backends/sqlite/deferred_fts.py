"""Full-text indexing of big writes, after their commit, in small writer units.

SQLite has one writer, and every tenant's write waits for the unit that holds it. A bulk
of 100 messages near the body limit (about 900 KB of text) spent most of its writer time
in its FTS5 insert: the writer trace of the adversarial load showed that group holding the
writer for about 55 ms of CPU (several hundred ms of wall time on a busy machine) while
the other tenants' single writes queued behind it. A bulk is still one all-or-nothing
transaction (docs/wire-decisions.md L9): its messages, counters, extraction and vector
queue rows commit together, and so do durable ``fts_queue`` rows naming the messages whose
full-text entries are still to write. Right after the commit the store indexes those rows
in units of at most ``CHUNK_CHARS`` characters (at least one message), keyed by the
workspace, so the writer's round-robin lets every other waiting workspace in between
chunks. Writes with less text than ``DEFER_CHARS`` (nearly all) index inline, as before.

Read-your-writes stays true, also across processes: every reader of ``messages_fts``
first checks, in its own read transaction, whether its workspace has queued rows
(``require_indexed``: one indexed lookup). If it has, the read raises ``Unindexed``; the
backend has the writer index the rows queued up to the newest one that read saw
(``settle``) and reads again, ignoring rows queued since: those were not acknowledged when
the read began, so a tenant streaming big bulks cannot keep its own search waiting. A message
acknowledged before a search started is committed with its queue row, so the search
either sees it indexed or sees the queue row and waits for it -- only searches of the
workspace that wrote the big bulk ever wait. A crash loses nothing: the queue is in the
file, and the next open (or the first search of the workspace) indexes it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Future
from typing import TypeVar

from nams_local.errors import BackendUnavailableError

from .dbapi import raw_connection
from .store import Ctx, SQLiteStore
from .text import message_scope
from .writer import text_cost

__all__ = [
    "CHUNK_CHARS",
    "CHUNK_COST",
    "DEFER_CHARS",
    "MAX_SETTLE_ROUNDS",
    "SETTLE_UNITS",
    "Unindexed",
    "defer",
    "index_chunk",
    "pending_workspaces",
    "read_indexed",
    "require_indexed",
    "resume",
    "settle",
    "should_defer",
]

R = TypeVar("R")

log = logging.getLogger("nams_local.sqlite")

#: A write whose messages hold more characters than this leaves their FTS entries to the
#: queue (a bulk of 100 messages of 9,000 characters does; a usual write does not).
DEFER_CHARS = 32 * 1024
#: One indexing unit writes the entries of at most this many characters (and at least one
#: message): about 2.5 ms of writer CPU on a busy 2-core machine (64 KiB chunks measured
#: about 10 ms each, and five of them shared a group with other tenants' writes).
CHUNK_CHARS = 16 * 1024
#: What a chunk unit costs the writer's group budget (``writer.text_cost`` counts 4,096
#: characters as one small write; an FTS5 insert costs about twice that per character).
CHUNK_COST = 2 * text_cost(CHUNK_CHARS)
#: A search settles its workspace's queue at most this many times (new big writes of the
#: same workspace may keep arriving) before it answers 503.
MAX_SETTLE_ROUNDS = 8

_QUEUE = "INSERT INTO fts_queue(message_pk, workspace) VALUES (?, ?)"
_LAST_QUEUED = "SELECT max(message_pk) FROM fts_queue WHERE workspace = ? AND message_pk <= ?"
_QUEUED = (
    "SELECT q.message_pk, m.content, c.id, c.user_id FROM fts_queue q "
    "JOIN messages m ON m.pk = q.message_pk JOIN conversations c ON c.pk = m.conversation_pk "
    "WHERE q.workspace = ? AND q.message_pk <= ? ORDER BY q.message_pk LIMIT ?"
)
_INSERT_FTS = "INSERT INTO messages_fts(rowid, body, scope) VALUES (?, ?, ?)"
_UNQUEUE = "DELETE FROM fts_queue WHERE message_pk = ?"
_WORKSPACES = "SELECT DISTINCT workspace FROM fts_queue"
#: No bound on the queued rows a read or a chunk looks at (SQLite's largest rowid).
_NO_LIMIT = 2**63 - 1
#: Chunk units a settling search queues at once (at most ~20 ms of writer CPU together).
SETTLE_UNITS = 8
#: Rows read per chunk at most (``CHUNK_CHARS`` usually stops it first).
_CHUNK_ROWS = 256


class Unindexed(Exception):
    """A read of ``messages_fts`` found queued rows of its workspace, up to message pk
    ``upto`` (``settle`` them, then read again)."""

    def __init__(self, workspace: str, upto: int) -> None:
        super().__init__(workspace, upto)
        self.workspace = workspace
        self.upto = upto


def should_defer(chars: int) -> bool:
    """Whether a write of ``chars`` characters of messages defers its FTS entries."""
    return chars > DEFER_CHARS


def defer(ctx: Ctx, pks: Sequence[int], chars: int) -> None:
    """From a message write of ``chars`` characters: queue the messages' FTS entries (in
    its transaction) and have them indexed once it has committed."""
    raw_connection(ctx.conn).executemany(_QUEUE, [(pk, ctx.workspace) for pk in pks])
    store = ctx.store

    def committed() -> None:
        store.fts_backlog.add(ctx.workspace, chars)
        _schedule(store, ctx)

    store.after_commit(committed)


def require_indexed(ctx: Ctx) -> None:
    """Before a read of ``messages_fts``: nothing if the workspace has no queued rows (up to
    ``ctx.fts_upto``); on a reader thread ``Unindexed`` (the backend settles and reads
    again); in a unit of work on the writer (legacy reads, ``:memory:`` stores) the rows
    are indexed here and now."""
    upto = ctx.fts_upto if ctx.fts_upto is not None else _NO_LIMIT
    found = raw_connection(ctx.conn).execute(_LAST_QUEUED, (ctx.workspace, upto)).fetchone()
    if found is None or found[0] is None:
        return
    if ctx.connection is not None:
        raise Unindexed(ctx.workspace, int(found[0]))
    while index_chunk(ctx, upto):
        pass


def index_chunk(ctx: Ctx, upto: int | None = None) -> bool:
    """A unit of work: index the workspace's oldest queued rows (those up to message pk
    ``upto``), up to ``CHUNK_CHARS`` characters. Returns whether more are queued."""
    raw = raw_connection(ctx.conn)
    limit = _NO_LIMIT if upto is None else upto
    rows = raw.execute(_QUEUED, (ctx.workspace, limit, _CHUNK_ROWS)).fetchall()
    taken: list[tuple[int, str, str]] = []
    chars = 0
    for pk, content, conversation_id, user_id in rows:
        if taken and chars + len(content) > CHUNK_CHARS:
            break
        taken.append((int(pk), content, message_scope(ctx.workspace, user_id, conversation_id)))
        chars += len(content)
    if taken:
        raw.executemany(_INSERT_FTS, taken)
        raw.executemany(_UNQUEUE, [(pk,) for pk, _, _ in taken])
        backlog, workspace = ctx.store.fts_backlog, ctx.workspace
        ctx.store.after_commit(lambda: backlog.remove(workspace, chars))
    return len(taken) < len(rows) or len(rows) == _CHUNK_ROWS


def _submit(store: SQLiteStore, ctx: Ctx) -> Future[bool]:
    return store.queue_unit(CHUNK_COST, index_chunk, ctx)


def _schedule(store: SQLiteStore, ctx: Ctx) -> None:
    """Index the workspace's queue chunk by chunk, each chunk a writer unit of its own."""
    if store.closed:
        return  # the next open (or search) indexes what is left

    def next_chunk(done: Future[bool]) -> None:
        try:
            more = done.result()
        except Exception as error:  # the queue stays; a search or the next open retries
            log.warning("deferred full-text indexing failed: %r", error)
            return
        if more:
            _schedule(store, ctx)

    try:
        _submit(store, ctx).add_done_callback(next_chunk)
    except RuntimeError:  # the writer lane stopped meanwhile
        return


async def settle(store: SQLiteStore, ctx: Ctx, upto: int) -> None:
    """Index the rows the workspace queued up to message pk ``upto``: ``SETTLE_UNITS``
    chunk units at a time (the writer's round-robin may take several into one group)."""
    while True:
        more = await asyncio.gather(
            *(store.run_weighted(CHUNK_COST, index_chunk, ctx, upto) for _ in range(SETTLE_UNITS))
        )
        if not more[-1]:
            return


async def read_indexed(store: SQLiteStore, ctx: Ctx, read: Callable[[Ctx], Awaitable[R]]) -> R:
    """``await read(ctx)``; if the workspace has queued rows, index those queued before
    the read and read again, ignoring rows queued since (not acknowledged when it began)."""
    for _ in range(MAX_SETTLE_ROUNDS):
        try:
            return await read(ctx)
        except Unindexed as unindexed:
            await settle(store, ctx, unindexed.upto)
            ctx = dataclasses.replace(ctx, fts_upto=unindexed.upto)
    raise BackendUnavailableError(
        "the full-text index of this workspace is still catching up with its writes; retry"
    )


def pending_workspaces(ctx: Ctx) -> list[str]:
    """Workspaces with queued rows (left by a crash or by another process)."""
    return [str(ws) for (ws,) in raw_connection(ctx.conn).execute(_WORKSPACES).fetchall()]


def resume(store: SQLiteStore, workspaces: Sequence[str]) -> None:
    """Index what earlier processes left queued, in the background of a new store."""
    for workspace in workspaces:
        _schedule(store, Ctx(store, workspace))
