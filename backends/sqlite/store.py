"""The physical store behind ``SQLiteBackend``: one database, one worker thread.

Every statement runs on a single dedicated thread over a single connection. SQLite allows
one writer at a time anyway, a ``:memory:`` database exists only on its one connection,
and the event loop is never blocked by disk or by the embedder. Workspaces are views over
one store (``SQLiteBackend.for_workspace``), so a server can serve many API keys from one
file.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Concatenate, Literal, ParamSpec, TypeVar, cast

from sqlalchemy import (
    Connection,
    Engine,
    Table,
    delete,
    func,
    insert,
    select,
    text,
    update,
)

from nams_local.embeddings import Embedder
from nams_local.errors import (
    BackendUnavailableError,
    NamsError,
    NotFoundError,
    TooManyRequestsError,
)

from . import entity_keys, file_check, fts_merges, migrations, prepared
from . import schema as s
from .batched_wakeups import BatchedWakeups
from .cypher_generations import CYPHER_GENERATIONS_DDL
from .dbapi import raw_connection
from .driver import DriverChoice, DriverInfo, open_engine
from .embedding_batcher import EmbeddingBatcher
from .entity_snapshots import SnapshotIndex
from .file_identity import FileIdentity
from .freshness import GENERATIONS_DDL, Freshness, guard_writer
from .fts_backlog import FtsBacklog
from .fts_bm25 import TermStats
from .fts_merges import FtsMerges
from .graph import EntityGraphMirror
from .inline_reads import BUDGET_SECONDS, InlineReads
from .lanes import Lanes
from .passages import PassageEmbedder, PassageIndex
from .resolution import Resolution
from .validity_rules import Supersession
from .vector_lane import QueuedVector, VectorLane, queued_leftovers
from .vectors import IndexKind, VectorIndex, make_index
from .write_lock import open_write_lock
from .writer import MAX_QUEUED_UNITS, WriterLane

logger = logging.getLogger("nams_local.sqlite")

__all__ = [
    "Ctx",
    "DriverInfo",
    "SQLiteStore",
    "VectorIndexChoice",
    "entity_text",
    "message_partition",
]

P = ParamSpec("P")
R = TypeVar("R")

VectorIndexChoice = Literal["auto", "sqlite-vec", "numpy"]

#: Reader threads of a file database (one turn fans out to about four reads at once).
READER_THREADS = 3
#: How long (seconds) a write waits for room in its workspace's full writer queue (then 429).
WRITE_ROOM_WAIT = 10.0

#: Rows embedded per batch when (re)building the vector index of an existing database.
_BACKFILL_BATCH = 256


@dataclass
class VectorState:
    embedder: EmbeddingBatcher
    messages: VectorIndex
    entities: SnapshotIndex

    @property
    def message_embedder(self) -> Embedder:
        """What embeds stored messages: whole text plus passages (``passages``)."""
        return PassageEmbedder(self.embedder)


class SQLiteStore:
    """Engine, connection, worker thread, vector indexes and graph mirrors of one database.

    ``inline_budget``: seconds of its thread's CPU a read may use on its caller's thread
    before it moves to a reader thread (``inline_reads.py``; ``0``: every read on a reader
    thread).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        embedder: Embedder | None,
        vector_index: VectorIndexChoice = "auto",
        driver: DriverChoice = "auto",
        resolution: Resolution | None = None,
        lanes: Lanes | None = None,
        supersession: Supersession | None = None,
        inline_budget: float = BUDGET_SECONDS,
    ) -> None:
        self.path = str(path)
        #: Which relationship types are single-valued (``validity.py``).
        self.supersession = supersession or Supersession()
        #: Bounded workers for embedding, reads and Cypher (``lanes.py``).
        self.lanes = lanes or Lanes()
        #: How entity names resolve to existing entities (aliases, candidate threshold).
        self.resolution = resolution or Resolution()
        #: The writer's futures reach their event loops in bursts (``batched_wakeups.py``).
        self._wakeups = BatchedWakeups()
        self._writer = WriterLane("nams-sqlite", self._forget_mirrors, self._wakeups.burst)
        self._closed = False
        self._resume_claimed = False
        #: Un-indexed characters of deferred full-text rows, per workspace (``fts_backlog``).
        self.fts_backlog = FtsBacklog()
        self._lock = threading.Lock()
        self._graphs: dict[str, EntityGraphMirror] = {}
        #: Rows left in ``vector_queue`` by an earlier process (found by the migration).
        self._leftovers: list[QueuedVector] = []
        want_vec = embedder is not None and vector_index != "numpy"
        file_check.check_before_open(path)
        try:
            self.engine, self.driver = open_engine(path, want_vec=want_vec, driver=driver)
        except Exception as exc:  # e.g. a read-only directory: one line, not a traceback
            failed = file_check.opening_failed(exc, self.path)
            if failed is None:
                raise
            raise failed from exc
        if vector_index == "sqlite-vec" and self.driver.vec_version is None:
            raise NamsError(f"sqlite-vec could not be loaded: {self.driver.vec_error}")
        self.vectors: VectorState | None = None
        if embedder is not None:
            kind: IndexKind = "sqlite-vec" if self.driver.vec_version else "numpy"
            self.vectors = VectorState(
                # One model thread for every text this store embeds (embedding_batcher).
                embedder=EmbeddingBatcher(embedder),
                messages=PassageIndex(
                    make_index(kind, "messages", embedder.dimension), embedder.dimension
                ),
                entities=SnapshotIndex(
                    make_index(kind, "entities", embedder.dimension), embedder.dimension
                ),
            )
        #: The opened file (deleted or replaced under the store: 503); other processes'
        #: writes to it (the mirrors revalidate): see those modules.
        self.identity = None if self.path == ":memory:" else FileIdentity(self.path)
        #: BM25 document counts of the FTS tables, for its readers (``fts_bm25``); a file
        #: store reads them on a reader thread, off any search's path.
        self.term_stats = TermStats(None if path == ":memory:" else self._read_later)
        #: Reader jobs run so far (tests and benchmarks count a turn's jobs).
        self.reads = 0
        self.freshness = Freshness(self.drop_graph, self.vectors.entities if self.vectors else None)
        guard_writer(self.engine, self.freshness, self.identity)
        self.conn: Connection = self._writer.call(self.engine.connect).result()
        self._writer.conn = self.conn
        # Two processes' writers take turns in the kernel, not by SQLite's busy sleeps
        # (``write_lock.py``); opened once the file is known to be a usable database.
        self._writer.call(self._writer.use_lock, open_write_lock(self.path)).result()
        try:
            self._writer.call(self._migrate).result()
        except BaseException:  # a failed migration changed nothing: release the file
            self._writer.call(self._writer.close_connection).result()
            self._writer.stop()
            self.engine.dispose()
            raise
        # Full-text segments are merged while the writer is idle (``fts_merges.py``).
        self._writer.call(self._writer.use_merges, FtsMerges()).result()
        #: Embeds committed messages in batches (``None`` without an embedder).
        self.vector_lane: VectorLane | None = None
        if self.vectors is not None:
            self.vector_lane = VectorLane(
                self.vectors.message_embedder, self.vectors.messages, self._on_writer
            )
            if self._leftovers:
                logger.info(
                    "embedding %d messages a previous process had queued, in the background",
                    len(self._leftovers),
                )
                self.vector_lane.enqueue(self._leftovers)
            self._leftovers = []
        # File databases also get reader threads with their own connections, so the
        # sources of one chat turn run in parallel (WAL readers never block the writer).
        self._readers: ThreadPoolExecutor | None = None
        self._read_engine: Engine | None = None
        #: Snapshots (exports) from callers' threads: a connection each (``snapshot``),
        #: and the inline reads' per-thread connections; opened by the first of them.
        self._snapshot_engine: Engine | None = None
        # Opened later: by then the process may have changed directory (a relative path).
        self._open_snapshots = functools.partial(
            open_engine,
            path if self.path == ":memory:" else os.path.abspath(path),
            want_vec=want_vec,
            driver=driver,
            readonly=True,
        )
        self._local = threading.local()
        #: Cheap reads on the caller's thread (``inline_reads.py``); file databases only.
        self.inline = InlineReads(
            self._snapshots, budget=0.0 if self.path == ":memory:" else inline_budget
        )
        if self.path != ":memory:":
            self._read_engine, _ = open_engine(
                path, want_vec=want_vec, driver=driver, readonly=True, reader_threads=READER_THREADS
            )
            self._readers = ThreadPoolExecutor(
                max_workers=READER_THREADS, thread_name_prefix="nams-sqlite-read"
            )

    # -- running work --------------------------------------------------------------
    async def run(self, fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        """Run ``fn`` on the writer thread inside one transaction (rolled back on error),
        committed together with the units queued beside it (``writer.py``); returns once
        that commit is done."""
        return await self.run_weighted(1, fn, *args, **kwargs)

    async def run_weighted(
        self, cost: int, fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs
    ) -> R:
        """``run`` for a unit whose ``cost`` (``writer.text_cost``) is more than one small
        write's. A workspace whose queue on the writer is full waits for room first."""
        if self._closed:
            raise BackendUnavailableError("the SQLite store is closed")
        key = _key(args)
        await self._room(key)
        return await self._settle(self._writer.unit(fn, args, kwargs, key=key, cost=cost))

    async def _room(self, key: str) -> None:
        """Wait (on the caller's loop) while ``key`` has a full queue on the writer: for
        its oldest waiting unit to finish, at most ``WRITE_ROOM_WAIT`` seconds in all; then
        429. Only the tenant that filled its queue waits."""
        blocker = self._writer.blocker(key)
        if blocker is None:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WRITE_ROOM_WAIT
        while blocker is not None:
            done = asyncio.Event()

            def wake(_: Future[object], done: asyncio.Event = done) -> None:
                # A closed loop (RuntimeError) has nobody waiting anymore.
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(done.set)

            blocker.add_done_callback(wake)
            try:
                await asyncio.wait_for(done.wait(), max(0.0, deadline - loop.time()))
            except TimeoutError:
                raise TooManyRequestsError(
                    "too many writes of this workspace are queued on the writer "
                    f"(at most {MAX_QUEUED_UNITS} waiting); retry later",
                    retry_after=1.0,
                ) from None
            blocker = self._writer.blocker(key)

    async def run_background(self, fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        """``run`` at background priority (queued extraction and summaries): it yields to
        request units on the writer, so no request write waits behind it."""
        if self._closed:
            raise BackendUnavailableError("the SQLite store is closed")
        future = self._writer.unit(fn, args, kwargs, key=_key(args), background=True)
        return await self._settle(future)

    async def _settle(self, future: Future[R]) -> R:
        """The writer's result; damage to the file found on the way is a 503 naming it."""
        try:
            return await self._wakeups.wrap(future)
        except Exception as exc:
            damaged = file_check.damage(exc, self.path)
            if damaged is None:
                raise
            raise damaged from exc

    @property
    def writer(self) -> WriterLane:
        """The writer lane (its queue and group statistics)."""
        return self._writer

    def claim_resume(self) -> bool:
        """``True`` for the first caller only: who resumes the work earlier processes left
        pending in this database (the extraction pipeline, once per store)."""
        with self._lock:
            claimed, self._resume_claimed = self._resume_claimed, True
        return not claimed

    def _on_writer(self, unit: Callable[[Connection], None]) -> Future[None]:
        """Queue ``unit(conn)`` as a unit of work; the future is done once it has committed
        (the vector lane's thread)."""
        return self._writer.unit(unit, (self.conn,), {})

    def queue_unit(
        self, cost: int, fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs
    ) -> Future[R]:
        """Queue a request-priority unit of work without waiting for it (callable from the
        writer thread, e.g. from a commit hook); its future resolves after its commit."""
        return self._writer.unit(fn, args, kwargs, key=_key(args), cost=cost)

    def after_commit(self, hook: Callable[[], None]) -> None:
        """From a unit of work: run ``hook`` once its transaction has committed."""
        self._writer.after_commit(hook)

    def _forget_mirrors(self, error: BaseException) -> None:
        # A unit of work that failed midway may have patched in-memory state (graph
        # mirrors, cached entity vectors) that the rollback just undid on disk.
        if self.vectors is not None:
            self.vectors.entities.reset()
        self._graphs.clear()

    async def read(
        self, fn: Callable[Concatenate[Ctx, P], R], ctx: Ctx, *args: P.args, **kwargs: P.kwargs
    ) -> R:
        """Run a read-only ``fn(ctx, ...)`` on the caller's thread if it is cheap, else on
        a reader thread (file databases: ``inline_reads.py``); for ``:memory:`` like
        ``run``. Only for units of work that touch nothing but SQL."""
        if self._readers is None:
            return await self.run(fn, ctx, *args, **kwargs)
        if self._closed:
            raise BackendUnavailableError("the SQLite store is closed")
        self.reads += 1
        loop = asyncio.get_running_loop()
        try:
            if self.inline.budget > 0:
                if self.identity is not None:
                    self.identity.check()
                done, result = self.inline.attempt(fn, ctx, args, kwargs)
                if done:
                    return cast(R, result)
            return await loop.run_in_executor(self._readers, self._read, fn, ctx, args, kwargs)
        except Exception as exc:
            damaged = file_check.damage(exc, self.path)
            if damaged is None:
                raise
            raise damaged from exc

    def _read_later(self, job: Callable[[Any], object]) -> Future[object] | None:
        """``job(raw DB-API connection)`` on a reader thread in a read transaction of its
        own, outside the read lanes (store maintenance, not a request); ``None`` once the
        store is closing."""
        readers = self._readers
        if readers is None or self._closed:
            return None
        try:
            return readers.submit(
                self._read, lambda ctx: job(raw_connection(ctx.conn)), Ctx(self, ""), (), {}
            )
        except RuntimeError:  # shut down meanwhile
            return None

    def _read(
        self,
        fn: Callable[..., R],
        ctx: Ctx,
        args: tuple[object, ...],
        kwargs: dict[str, object],
    ) -> R:
        if self.identity is not None:
            self.identity.check()  # before connecting: a new connection would open a new file
        conn: Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            assert self._read_engine is not None
            conn = self._local.conn = self._read_engine.connect()
        with conn.begin():
            return fn(dataclasses.replace(ctx, connection=conn), *args, **kwargs)

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[Callable[[Callable[[Connection], Any]], Any]]:
        """``read(fn)`` for a long series of reads (an export): for a file, ``fn(conn)``
        on a connection of its own inside one read transaction, so every read sees the
        same snapshot and writers are never blocked (WAL); for ``:memory:``, each read is
        a unit of work on the writer (its only connection)."""
        if self._read_engine is None:
            yield lambda fn: self.run_sync(fn, self.conn)
            return
        if self.identity is not None:
            self.identity.check()
        # Not the reader threads' engine: its per-thread pool would close their
        # connections once a sixth thread (an application's own) connected.
        with self._snapshots().connect() as conn, conn.begin():
            yield lambda fn: fn(conn)

    def _snapshots(self) -> Engine:
        """The read-only engine exports and inline reads use (``NullPool``), opened on
        first use."""
        with self._lock:
            if self._snapshot_engine is None:
                self._snapshot_engine, _ = self._open_snapshots()
            return self._snapshot_engine

    def run_sync(self, fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        """``run`` for synchronous callers (the CLI); never call it from the worker thread."""
        return self._writer.unit(fn, args, kwargs, key=_key(args)).result()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        try:
            if self.vector_lane is not None:
                self.vector_lane.stop()  # embeds what is queued first
            if self.vectors is not None:
                self.vectors.embedder.close()
            self._writer.call(self._writer.close_connection).result()
        finally:
            self._writer.stop()
            self.engine.dispose()
            if self._readers is not None:
                self._readers.shutdown(wait=True)
            if self._read_engine is not None:
                self._read_engine.dispose()
            self.inline.close()
            if self._snapshot_engine is not None:
                self._snapshot_engine.dispose()
            self.lanes.close()

    @property
    def closed(self) -> bool:
        return self._closed

    # -- graph mirrors -------------------------------------------------------------
    def graph(self, workspace: str) -> EntityGraphMirror:
        """The workspace's graph mirror, built from SQLite on first use (worker thread)."""
        mirror = self._graphs.get(workspace)
        if mirror is None:
            mirror = EntityGraphMirror.load(self.conn, workspace, self.resolution)
            self._graphs[workspace] = mirror
        return mirror

    def drop_graph(self, workspace: str) -> None:
        """Forget a mirror after a change that is simpler to rebuild than to patch."""
        self._graphs.pop(workspace, None)

    # -- schema --------------------------------------------------------------------
    def _migrate(self) -> None:
        conn = self.conn
        file_check.check_after_open(conn.connection.dbapi_connection, self.path)
        # One transaction: a failed upgrade leaves the file as it was.
        with self._writer.transaction(conn):
            existing = conn.execute(
                text("SELECT 1 FROM sqlite_master WHERE name = 'schema_version'")
            ).first()
            version = (
                conn.execute(select(s.schema_version.c.version)).scalar() if existing else None
            )
            if version is not None and version > s.SCHEMA_VERSION:
                raise NamsError(
                    f"{self.path} has schema version {version}; this nams-local knows "
                    f"{s.SCHEMA_VERSION}. Upgrade nams-local to open it."
                )
            if version is not None and version < s.SCHEMA_VERSION:
                logger.info("upgrading %s from schema version %d", self.path, version)
                reached = migrations.upgrade(conn, version)
                conn.execute(update(s.schema_version).values(version=reached))
            s.metadata.create_all(conn)
            conn.exec_driver_sql(s.OPEN_EDGES_INDEX_DDL)
            if version is None:
                conn.execute(insert(s.schema_version).values(version=s.SCHEMA_VERSION))
            fresh_fts = not conn.execute(
                text("SELECT 1 FROM sqlite_master WHERE name = 'messages_fts'")
            ).first()
            for ddl in (*s.FTS_DDL, *s.FTS_VOCAB_DDL):
                conn.execute(text(ddl))
            if fresh_fts:
                for stmt in s.FTS_RANK:
                    conn.execute(text(stmt))
            fts_merges.configure(conn.connection.dbapi_connection)
            self._prepare_vectors(conn)
            entity_keys.migrate(conn)
            for ddl in (*GENERATIONS_DDL, *CYPHER_GENERATIONS_DDL):
                conn.exec_driver_sql(ddl)
        self.freshness.attach(conn.connection.dbapi_connection)

    def _prepare_vectors(self, conn: Connection) -> None:
        """Make the vector index match the configured embedder, rebuilding it if not.

        The ``meta`` row ``vector_index`` records ``<index kind>:<embedder name>:<dim>``. A
        database written with embeddings off, or by another embedder, is re-embedded once
        on open, so vectors never mix models and no row is missing from the index.
        """
        current = conn.execute(select(s.meta.c.value).where(s.meta.c.key == "vector_index"))
        recorded = current.scalar()
        if self.vectors is None:
            wanted = "none"
        else:
            v = self.vectors
            wanted = f"{v.messages.kind}:{v.embedder.name}:{v.embedder.dimension}"
        if recorded == wanted:
            if self.vectors is not None:
                # Embedded by the vector lane once it runs, not here: open stays quick.
                self._leftovers = queued_leftovers(conn, message_partition)
            return
        conn.execute(delete(s.vector_queue))  # the rebuild (or no index) covers them all
        if self.vectors is not None:
            for index in (self.vectors.messages, self.vectors.entities):
                index.drop(conn)
                index.create(conn)
            self._backfill(conn, self.vectors)
        conn.execute(
            text("INSERT OR REPLACE INTO meta(key, value) VALUES ('vector_index', :v)"),
            {"v": wanted},
        )

    def _backfill(self, conn: Connection, v: VectorState) -> None:
        m, c = s.messages, s.conversations
        total = conn.execute(select(func.count()).select_from(m)).scalar_one()
        if total:
            logger.info("embedding %d stored messages for the vector index", total)
        rows = conn.execute(
            select(m.c.pk, m.c.content, c.c.workspace, c.c.user_id, c.c.id)
            .join(c, c.c.pk == m.c.conversation_pk)
            .order_by(m.c.pk)
        ).all()
        for start in range(0, len(rows), _BACKFILL_BATCH):
            batch = rows[start : start + _BACKFILL_BATCH]
            vectors = v.message_embedder.embed([r.content for r in batch])
            v.messages.add(
                conn,
                [(r.pk, message_partition(r.workspace, r.user_id), r.id) for r in batch],
                vectors,
            )
        e = s.entities
        erows = conn.execute(
            select(e.c.pk, e.c.name, e.c.description, e.c.workspace, e.c.type).where(
                e.c.merged_into_pk.is_(None)
            )
        ).all()
        for start in range(0, len(erows), _BACKFILL_BATCH):
            ebatch = erows[start : start + _BACKFILL_BATCH]
            vectors = v.embedder.embed([entity_text(r.name, r.description) for r in ebatch])
            v.entities.add(conn, [(r.pk, r.workspace, r.type.casefold()) for r in ebatch], vectors)

    # -- statistics ----------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        conn = self.conn
        tables = {
            "workspaces": select(func.count(func.distinct(s.conversations.c.workspace))),
            "conversations": select(func.count()).select_from(s.conversations),
            "messages": select(func.count()).select_from(s.messages),
            "entities": select(func.count()).select_from(s.entities),
            "relationships": select(func.count()).select_from(s.relationships),
            "reasoning_steps": select(func.count()).select_from(s.steps),
            "tool_calls": select(func.count()).select_from(s.tool_calls),
        }
        return {name: int(conn.execute(stmt).scalar_one()) for name, stmt in tables.items()}

    def workspace_counts(self) -> dict[str, dict[str, int]]:
        """Conversations, messages and live entities per workspace, by name (what
        ``nams-local info`` lists, so the per-token workspaces of ``serve`` can be found)."""
        conn = self.conn
        found: dict[str, dict[str, int]] = {}
        per = {
            "conversations": select(s.conversations.c.workspace, func.count()).group_by(
                s.conversations.c.workspace
            ),
            "messages": select(s.messages.c.workspace, func.count()).group_by(
                s.messages.c.workspace
            ),
            "entities": select(s.entities.c.workspace, func.count())
            .where(s.entities.c.merged_into_pk.is_(None))
            .group_by(s.entities.c.workspace),
        }
        for name, stmt in per.items():
            for workspace, count in conn.execute(stmt).all():
                row = found.setdefault(
                    str(workspace), {"conversations": 0, "messages": 0, "entities": 0}
                )
                row[name] = int(count)
        return dict(sorted(found.items()))


def _key(args: tuple[object, ...]) -> str:
    """The writer's fairness key of a unit of work: the workspace of its ``Ctx``."""
    return args[0].workspace if args and isinstance(args[0], Ctx) else ""


def message_partition(workspace: str, user_id: str | None) -> str:
    """The vector partition of a message: its workspace and its conversation's user."""
    return f"{workspace}\x1f{user_id or ''}"


def entity_text(name: str, description: str | None) -> str:
    """What an entity's vector and full-text entry are made of."""
    return f"{name}. {description}" if description else name


@dataclass(frozen=True, slots=True)
class Ctx:
    """What a unit of work on the worker thread needs: the store and the workspace."""

    store: SQLiteStore
    workspace: str

    #: A reader thread's connection; ``None`` means the writer's.
    connection: Connection | None = None
    #: Full-text rows queued after this message pk need not be indexed for this read
    #: (``deferred_fts.read_indexed``: they were not acknowledged when it started).
    fts_upto: int | None = None

    @property
    def conn(self) -> Connection:
        return self.connection if self.connection is not None else self.store.conn

    @property
    def vectors(self) -> VectorState | None:
        return self.store.vectors

    def find(self, table: Table, id_: str) -> Any | None:
        """The row with API id ``id_`` in this workspace, or ``None``."""
        return prepared.row_by_id(self.conn, table, id_, self.workspace)

    def row(self, table: Table, id_: str, what: str) -> Any:
        """The row with API id ``id_`` in this workspace, or ``NotFoundError``."""
        found = self.find(table, id_)
        if found is None:
            raise NotFoundError(f"{what} {id_!r} not found")
        return found
