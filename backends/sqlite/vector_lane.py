"""The vector lane: messages are embedded after their write is acknowledged, in batches.

Embedding a short text alone costs the model several milliseconds; embedding 64 together
costs little more per text than the model's batched throughput. So a message write does
not embed: it commits the message, its full-text entry and a ``vector_queue`` row (one
group commit on the writer thread), and is acknowledged. This lane's thread then embeds
whatever is queued in one batch (everything that arrived while the previous batch was
being embedded, up to ``BATCH``) and stores the vectors in one writer unit of work. The
embedding itself runs on the store's model threads (``embedding_batcher``), beside the
search queries waiting at that moment.

Read-your-writes stays true for vector search: a vector or hybrid search first waits
(``pending``) until the rows that were queued in *its own* scope (the conversation, or
the user's partition) when it started are embedded — never for other tenants' rows: the
lane embeds rows a search waits for before older ones nobody waits for (``_next_batch``). It
waits as long as the lane makes progress (it is embedding a batch, or stored one within
the last ``READ_WAIT_SECONDS``: a backlog of ``MAX_BACKLOG`` rows on a slow, busy machine
takes longer than one such period), and never longer than ``READ_WAIT_MAX_SECONDS`` in
all; after that it
answers from what is indexed (text search finds the message regardless). Writers are
held back (``room``) while more than ``MAX_BACKLOG`` rows wait, so a bulk ingest runs at
the embedder's batched pace instead of growing the queue without bound.

The queue is durable: a row queued by a process that died is handed to this lane when
the store is next opened (``queued_leftovers``) and embedded in the background like a new
write — opening a store with a large leftover queue does not wait for the model, and a
vector search in a scope with leftovers waits for them as it would for a fresh write.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

from sqlalchemy import Connection, delete, select

from nams_local.embeddings import Embedder

from . import schema as s
from .vectors import VectorIndex, Vectors

__all__ = [
    "BATCH",
    "BATCH_COST",
    "MAX_BACKLOG",
    "READ_WAIT_MAX_SECONDS",
    "READ_WAIT_SECONDS",
    "QueuedVector",
    "VectorLane",
    "conversation_key",
    "model_chars",
    "partition_key",
    "queued_leftovers",
]

log = logging.getLogger("nams_local.sqlite")

#: Texts embedded together at most.
BATCH = 64
#: Text embedded together at most, as ``model_chars`` counts it: 64 chat messages of ~250
#: characters, or about 13 texts the model reads to its limit.
BATCH_COST = 16_000
#: The characters of a text that count: the model reads 256 tokens at most (about this).
_COST_CHARS = 1_200


def model_chars(text: str) -> int:
    """What a text costs the model, in characters (it truncates long ones)."""
    return min(len(text), _COST_CHARS)


#: Queued rows beyond which writers wait for the lane (they resume at half of it).
MAX_BACKLOG = 1024
#: How long a vector search waits for its own scope's queued rows while the lane stores
#: no batch at all (a stalled lane), and at most in all.
READ_WAIT_SECONDS = 10.0
READ_WAIT_MAX_SECONDS = 60.0
#: Attempts at embedding one batch before its rows are left for the next open.
_ATTEMPTS = 3


def conversation_key(conversation_id: str) -> str:
    return f"c\x1f{conversation_id}"


def partition_key(partition: str) -> str:
    return f"p\x1f{partition}"


@dataclass(frozen=True, slots=True)
class QueuedVector:
    """A committed message waiting for its vector."""

    pk: int
    text: str
    partition: str
    conversation_id: str

    def scopes(self) -> tuple[str, str]:
        return conversation_key(self.conversation_id), partition_key(self.partition)

    @property
    def workspace(self) -> str:
        """The workspace the row belongs to (its partition is ``workspace\x1fuser``)."""
        return self.partition.partition("\x1f")[0]


@dataclass(eq=False)
class _Waiter:
    upto: int
    future: Future[None] = field(default_factory=Future)


#: Queues a unit of work on the writer thread; the future is done once it has committed.
QueueOnWriter = Callable[[Callable[[Connection], None]], "Future[None]"]


@dataclass(frozen=True, slots=True)
class _Storing:
    """A batch whose vectors were handed to the writer (``attempt``: which time)."""

    batch: list[tuple[int, QueuedVector]]
    items: list[QueuedVector]
    vectors: Vectors
    attempt: int


class VectorLane:
    """The embedding thread of a store (see the module docstring)."""

    def __init__(
        self, embedder: Embedder, index: VectorIndex, queue_on_writer: QueueOnWriter
    ) -> None:
        self._embedder = embedder
        self._index = index
        self._queue_on_writer = queue_on_writer
        self._cond = threading.Condition()
        self._queue: list[tuple[int, QueuedVector]] = []
        self._seq = 0
        #: Sequence numbers still pending (queued or being embedded), per scope key.
        self._pending: dict[str, set[int]] = {}
        self._waiters: dict[str, list[_Waiter]] = {}
        self._backlog = 0
        self._room: list[Future[None]] = []
        self._drained: list[Future[None]] = []
        self._stopping = False
        #: Batches done so far, whether one is being embedded now and how many are being
        #: stored (a waiting reader's signs of progress).
        self.batches = 0
        self._embedding = False
        self._storing = 0
        self._thread = threading.Thread(target=self._loop, name="nams-sqlite-embed", daemon=True)
        self._thread.start()

    # -- producers and readers ---------------------------------------------------------
    def enqueue(self, items: Sequence[QueuedVector]) -> None:
        """Queue committed rows (called from the writer's commit hook)."""
        with self._cond:
            for item in items:
                self._seq += 1
                self._queue.append((self._seq, item))
                for key in item.scopes():
                    self._pending.setdefault(key, set()).add(self._seq)
            self._backlog += len(items)
            self._cond.notify()

    def has_pending(self, keys: Iterable[str]) -> bool:
        """Whether any row queued under ``keys`` is not embedded yet (a cheap check)."""
        with self._cond:
            return any(self._pending.get(key) for key in keys)

    def pending(self, keys: Iterable[str]) -> Future[None] | None:
        """A future done once every row now queued under ``keys`` is embedded (``None``:
        nothing is)."""
        with self._cond:
            waits = [(key, max(self._pending[key])) for key in keys if self._pending.get(key)]
            if not waits:
                return None
            done: Future[None] = Future()
            remaining = [len(waits)]

            def one_done(_: Future[None]) -> None:
                with self._cond:
                    remaining[0] -= 1
                    last = remaining[0] == 0
                if last and not done.done():
                    done.set_result(None)

            for key, upto in waits:
                waiter = _Waiter(upto)
                self._waiters.setdefault(key, []).append(waiter)
                waiter.future.add_done_callback(one_done)
            return done

    def room(self) -> Future[None] | None:
        """A future done once the backlog is low enough for another write (``None``: now)."""
        with self._cond:
            if self._backlog < MAX_BACKLOG:
                return None
            future: Future[None] = Future()
            self._room.append(future)
            return future

    async def settled(self, keys: Iterable[str]) -> None:
        """Wait for the rows queued now under ``keys``: while the lane makes progress, at
        most ``READ_WAIT_MAX_SECONDS`` (see the module docstring)."""
        future = self.pending(keys)
        if future is None:
            return
        waiting = asyncio.wrap_future(future)
        loop = asyncio.get_running_loop()
        give_up = loop.time() + READ_WAIT_MAX_SECONDS
        while True:
            seen = self.batches
            period = min(READ_WAIT_SECONDS, give_up - loop.time())
            try:
                await asyncio.wait_for(asyncio.shield(waiting), max(period, 0.0))
                return
            except TimeoutError:
                stalled = self.batches == seen and not self._working
                if stalled or loop.time() >= give_up:
                    waiting.cancel()
                    log.warning("vector search went ahead with rows still waiting to be embedded")
                    return

    async def wait_for_room(self) -> None:
        """Wait while the backlog is over ``MAX_BACKLOG`` (a writer's backpressure)."""
        future = self.room()
        if future is not None:
            await asyncio.wrap_future(future)

    async def drained(self) -> None:
        """Wait until nothing is queued (benchmarks: ingest counts until it is indexed)."""
        with self._cond:
            if self._backlog == 0:
                return
            future: Future[None] = Future()
            self._drained.append(future)
        await asyncio.wrap_future(future)

    @property
    def backlog(self) -> int:
        return self._backlog

    def stop(self) -> None:
        """Embed what is queued, then end the thread."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
        self._thread.join()

    # -- the thread ----------------------------------------------------------------------
    def _loop(self) -> None:
        """Embed a batch, hand its vectors to the writer and go on to the next batch while
        they are stored: the model never idles through a writer round trip (a queued
        writer unit waits for the group in progress). A batch's rows are released to
        their readers the moment its vectors commit (``_stored``, on the writer thread)."""
        while True:
            with self._cond:
                while not self._queue and not self._stopping:
                    self._cond.wait()
                if not self._queue:
                    return
                batch = self._next_batch()
                self._embedding = True
            items = [item for _, item in batch]
            try:
                vectors = self._embed(items)
            finally:
                self._embedding = False
            if vectors is None:
                self._done(batch)
            else:
                self._store(_Storing(batch, items, vectors, 1))

    @property
    def _working(self) -> bool:
        """Whether a batch is being embedded or stored (a waiting reader's sign of
        progress, with ``batches``)."""
        return self._embedding or self._storing > 0

    def _embed(self, items: list[QueuedVector]) -> Vectors | None:
        for attempt in range(1, _ATTEMPTS + 1):
            try:
                return self._embedder.embed([item.text for item in items])
            except Exception as error:
                if attempt == _ATTEMPTS:
                    self._gave_up(items, error)
                    return None
                time.sleep(0.05 * attempt)
        return None  # pragma: no cover - the loop returns

    def _store(self, storing: _Storing) -> None:
        unit = functools.partial(
            store_vectors, index=self._index, items=storing.items, vectors=storing.vectors
        )
        with self._cond:
            self._storing += 1
        self._queue_on_writer(unit).add_done_callback(functools.partial(self._stored, storing))

    def _stored(self, storing: _Storing, future: Future[None]) -> None:
        """The writer committed (or failed) a batch's vectors: release its rows, or store
        them again (``_ATTEMPTS`` times in all)."""
        with self._cond:
            self._storing -= 1
        error = future.exception()
        if error is not None and storing.attempt < _ATTEMPTS:
            self._store(dataclasses.replace(storing, attempt=storing.attempt + 1))
            return
        if error is not None:
            self._gave_up(storing.items, error)
        self._done(storing.batch)

    def _done(self, batch: list[tuple[int, QueuedVector]]) -> None:
        with self._cond:
            self.batches += 1
        self._release(batch)

    @staticmethod
    def _gave_up(items: list[QueuedVector], error: BaseException) -> None:
        log.warning(
            "embedding %d queued messages failed (%r); they stay queued and are "
            "embedded when the store is next opened",
            len(items),
            error,
        )

    def _next_batch(self) -> list[tuple[int, QueuedVector]]:
        """Up to ``BATCH`` queued rows and ``BATCH_COST`` of text (under the lock): rows a
        reader or a write's acknowledgement is waiting for first, taken in turn from each
        workspace that has some, then the oldest. A waiting scope need not wait behind a
        backlog of rows nobody waits for (a bulk ingest, leftovers), nor behind another
        workspace's waited rows: one tenant's bulk of long messages is a few rows of each
        batch, not whole batches. At least ``BATCH // 8`` rows of each batch are the oldest,
        so every row gets its turn; a batch holds at least one row, however long."""
        queue = self._queue
        turns: dict[str, list[int]] = {}
        wanted = self._waiters.keys()
        if wanted:
            for at, (_, item) in enumerate(queue):
                if not wanted.isdisjoint(item.scopes()):
                    turns.setdefault(item.workspace, []).append(at)
        waited = [at for round_ in itertools.zip_longest(*turns.values()) for at in round_]
        picked: dict[int, None] = {}
        spent = 0
        for at in itertools.chain(
            itertools.islice((at for at in waited if at is not None), BATCH - BATCH // 8),
            range(len(queue)),
        ):
            if len(picked) >= BATCH:
                break
            if at in picked:
                continue
            cost = model_chars(queue[at][1].text)
            if picked and spent + cost > BATCH_COST:
                break
            picked[at] = None
            spent += cost
        batch = [queue[at] for at in sorted(picked)]
        self._queue = [entry for at, entry in enumerate(queue) if at not in picked]
        return batch

    def _release(self, batch: list[tuple[int, QueuedVector]]) -> None:
        ready: list[Future[None]] = []
        with self._cond:
            for seq, item in batch:
                for key in item.scopes():
                    seqs = self._pending.get(key)
                    if seqs is not None:
                        seqs.discard(seq)
                        if not seqs:
                            del self._pending[key]
                    ready.extend(self._ready_waiters(key))
            self._backlog -= len(batch)
            if self._backlog <= MAX_BACKLOG // 2:
                ready.extend(self._room)
                self._room = []
            if self._backlog == 0:
                ready.extend(self._drained)
                self._drained = []
        for future in ready:
            if not future.done():
                future.set_result(None)

    def _ready_waiters(self, key: str) -> list[Future[None]]:
        waiters = self._waiters.get(key)
        if not waiters:
            return []
        seqs = self._pending.get(key)
        oldest = min(seqs) if seqs else None
        keep, ready = [], []
        for waiter in waiters:
            if oldest is None or oldest > waiter.upto:
                ready.append(waiter.future)
            elif not waiter.future.cancelled():
                keep.append(waiter)
        if keep:
            self._waiters[key] = keep
        else:
            del self._waiters[key]
        return ready


def store_vectors(
    conn: Connection, index: VectorIndex, items: Sequence[QueuedVector], vectors: Vectors
) -> None:
    """Index the vectors of the rows still queued (a message deleted meanwhile took its
    queue row with it) and dequeue them."""
    q = s.vector_queue
    pks = [item.pk for item in items]
    still = set(conn.execute(select(q.c.message_pk).where(q.c.message_pk.in_(pks))).scalars())
    keep = [i for i, item in enumerate(items) if item.pk in still]
    if keep:
        index.add(
            conn,
            [(items[i].pk, items[i].partition, items[i].conversation_id) for i in keep],
            vectors[keep],
        )
        conn.execute(delete(q).where(q.c.message_pk.in_([items[i].pk for i in keep])))


def queued_leftovers(
    conn: Connection, message_partition: Callable[[str, str | None], str]
) -> list[QueuedVector]:
    """The rows a previous process queued but never embedded (read on open, embedded by
    the lane afterwards)."""
    m, c, q = s.messages, s.conversations, s.vector_queue
    rows = conn.execute(
        select(m.c.pk, m.c.content, c.c.workspace, c.c.user_id, c.c.id)
        .join(q, q.c.message_pk == m.c.pk)
        .join(c, c.c.pk == m.c.conversation_pk)
        .order_by(m.c.pk)
    ).all()
    return [
        QueuedVector(r.pk, r.content, message_partition(r.workspace, r.user_id), r.id) for r in rows
    ]
