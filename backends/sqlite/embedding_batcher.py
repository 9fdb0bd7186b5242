"""The model runs of a store: every text it embeds goes through here, in batches.

Why: on a small server the embedder is the costliest thing a request does. It was run
from many threads at once — the vector lane's message batches, one embedding thread per
search query, entity vectors for extraction — and every search query was a model run of
its own, where a run of one 10-token text costs about what a run of twenty does. Here two
threads run the model, each run taking *whatever is queued when its thread frees up* (no
timer: the window is the previous run):

- the bulk thread runs one chunk of bulk work (message vectors, entity vectors) at a
  time, and takes every search query waiting at that moment into the same run;
- the query thread runs the waiting queries of concurrent searches (of every workspace)
  together, so a query never waits behind a bulk chunk being embedded; an ``embed`` of a
  few texts (``PROMPT_TEXTS``: an entity's vector, often on the writer thread) goes with
  them.

So at most two runs are in flight (there were three or more), bulk work is embedded in
arrival order, and N concurrent new queries cost one or two runs instead of N. The
embedder sorts a run's texts by length and cuts batches where padding would cost more
than a run (``RUN_OVERHEAD_TOKENS`` in ``nams_local.embeddings``), so a 10-token query is
never padded to a 50-token message.

Bounds: bulk work is cut into chunks of at most ``CHUNK_TEXTS`` texts and ``CHUNK_CHARS``
characters; a run holds at most ``MAX_QUERIES`` queries; queries are served in arrival
order, and all workspaces' queries share each run, so no workspace holds the model from
another's queries at all, nor from its bulk work for longer than one chunk.

Before any of that, a text embedded lately is answered from ``text_vectors`` and a text
repeated within one call is run once: on two busy cores the model's price per text
hardly falls with batch size, so the texts it never sees are the real saving (in the
``load`` mix, entity vectors were a third of all texts, mostly the same names new in
each workspace). Every call is counted by caller and every run by thread, with its
tokens and CPU, in ``stats`` (``embedding_stats``; ``NAMS_EMBED_TRACE`` traces runs).

Only a :class:`~nams_local.embeddings.BaseEmbedder` has its queries batched (through
``BaseEmbedder.query_future``, so its query cache, single flight and statistics stay the
ones the caller configured and inspects); any other ``Embedder`` keeps its own
``embed_query``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter, deque
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from nams_local.embeddings import (
    BaseEmbedder,
    Embedder,
    Matrix,
    ModelCounts,
    Vector,
    WrappedEmbedder,
)

from .embedding_stats import QUERIES, EmbeddingStats, RunThread
from .text_vectors import TextVectors

__all__ = ["CHUNK_CHARS", "CHUNK_TEXTS", "MAX_QUERIES", "PROMPT_TEXTS", "EmbeddingBatcher"]

log = logging.getLogger("nams_local.sqlite")

#: Bulk texts in one run at most.
CHUNK_TEXTS = 32
#: Bulk characters in one run at most (about 2,000 tokens; one longer text still goes alone).
CHUNK_CHARS = 8000
#: Queries in one run at most.
MAX_QUERIES = 64
#: An ``embed`` of at most this many texts is served like queries (never behind a bulk
#: chunk): a caller such as the writer thread embedding one entity must not queue behind
#: an ingest's message vectors.
PROMPT_TEXTS = 4


@dataclass(eq=False)
class _Bulk:
    """One ``embed`` call: its texts, the rows done so far and the caller's future."""

    texts: list[str]
    dimension: int
    #: Each text's caller (``embedding_stats``).
    callers: list[str]
    future: Future[Matrix] = field(default_factory=Future)
    remaining: int = 0
    out: Matrix = field(init=False)

    def __post_init__(self) -> None:
        self.out = np.empty((len(self.texts), self.dimension), dtype=np.float32)


@dataclass(frozen=True, slots=True)
class _Chunk:
    bulk: _Bulk
    start: int
    end: int

    @property
    def texts(self) -> list[str]:
        return self.bulk.texts[self.start : self.end]

    @property
    def callers(self) -> list[str]:
        return self.bulk.callers[self.start : self.end]


class _Query(NamedTuple):
    """One text served on the query thread: a search query, or a text of a small ``embed``."""

    text: str
    future: Future[Vector]
    caller: str


def _callers(caller: str | Sequence[str] | None, n: int) -> list[str]:
    if caller is None:
        caller = f"other@{threading.current_thread().name}"
    if isinstance(caller, str):
        return [caller] * n
    callers = list(caller)
    if len(callers) != n:
        raise ValueError(f"{len(callers)} callers for {n} texts")
    return callers


def _chunks(bulk: _Bulk) -> list[_Chunk]:
    out: list[_Chunk] = []
    start = 0
    chars = 0
    for i, text in enumerate(bulk.texts):
        if i > start and (i - start >= CHUNK_TEXTS or chars + len(text) > CHUNK_CHARS):
            out.append(_Chunk(bulk, start, i))
            start, chars = i, 0
        chars += len(text)
    out.append(_Chunk(bulk, start, len(bulk.texts)))
    return out


class EmbeddingBatcher(WrappedEmbedder):
    """An ``Embedder`` that runs its inner embedder on one thread, in batches (see the
    module docstring). ``close`` finishes what is queued; calls after it run inline."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self._cond = threading.Condition()
        self._queries: deque[_Query] = deque()
        self._bulk: deque[_Chunk] = deque()
        self._closed = False
        #: Model runs so far (tests and benchmarks read it).
        self.runs = 0
        #: Vectors of texts embedded lately, so they are not embedded again.
        self.known = TextVectors.from_environment()
        #: Calls by caller and runs by thread, with their tokens and CPU.
        self.stats = EmbeddingStats.from_environment()
        self._threads = [
            threading.Thread(target=self._loop, args=(bulk,), name=name, daemon=True)
            for bulk, name in ((True, "nams-sqlite-model"), (False, "nams-sqlite-query"))
        ]
        for thread in self._threads:
            thread.start()

    @property
    def batches_queries(self) -> bool:
        """Whether ``query`` batches (the inner embedder is a ``BaseEmbedder``)."""
        return isinstance(self.inner, BaseEmbedder)

    # -- the Embedder protocol ---------------------------------------------------------
    def embed(self, texts: Sequence[str], caller: str | Sequence[str] | None = None) -> Matrix:
        """Embed ``texts`` in the model thread's runs; blocks until all are done.

        A text embedded lately (``text_vectors``), or twice in this call, is not run
        again. ``caller`` names who asks (``embedding_stats``), for all texts or one per
        text; unnamed, it is ``other@<thread name>``."""
        batch = list(texts)
        if not all(isinstance(text, str) for text in batch):
            return self.inner.embed(batch)  # which says what is wrong (a TypeError)
        callers = _callers(caller, len(batch))
        known = self.known.known(batch)
        new: dict[str, str] = {}  # text -> its first caller, in order
        for text, name, vector in zip(batch, callers, known, strict=True):
            if vector is None and text not in new:
                new[text] = name
        self._record_calls(batch, callers, known, new)
        if len(new) == len(batch):  # all new (and an empty call)
            fresh = self._embed_new(batch, callers)
            self.known.keep(batch, fresh)
            return fresh
        out = np.empty((len(batch), self.inner.dimension), dtype=np.float32)
        if new:
            fresh = self._embed_new(list(new), list(new.values()))
            self.known.keep(list(new), fresh)
            at = {text: row for row, text in enumerate(new)}
        for i, (text, vector) in enumerate(zip(batch, known, strict=True)):
            out[i] = vector if vector is not None else fresh[at[text]]
        return out

    def _embed_new(self, batch: list[str], callers: list[str]) -> Matrix:
        if not batch or self._inline():
            return self.inner.embed(batch)
        if len(batch) <= PROMPT_TEXTS:  # e.g. an entity's vector inside a writer unit
            rows = [self._start_query(t, name) for t, name in zip(batch, callers, strict=True)]
            return np.stack([row.result() for row in rows])
        bulk = _Bulk(batch, self.inner.dimension, callers)
        chunks = _chunks(bulk)
        bulk.remaining = len(chunks)
        with self._cond:
            if self._closed:
                return self.inner.embed(batch)
            self._bulk.extend(chunks)
            self._cond.notify_all()
        return bulk.future.result()

    def _record_calls(
        self,
        texts: list[str],
        callers: list[str],
        known: list[Vector | None],
        new: dict[str, str],
    ) -> None:
        chars: Counter[str] = Counter()
        cached: Counter[str] = Counter()
        first: set[str] = set()
        for text, name, vector in zip(texts, callers, known, strict=True):
            chars[name] += len(text)
            if vector is None and text in new and text not in first:
                first.add(text)  # the one run for this text
            else:
                cached[name] += 1
        for name, n in Counter(callers).items():
            self.stats.record_call(name, n, chars[name], cached[name])

    def embed_query(self, text: str) -> Vector:
        if not isinstance(self.inner, BaseEmbedder):
            return self.inner.embed_query(text)
        vector: Vector = self.query(text).result().copy()
        return vector

    def query(self, text: str) -> Future[Vector]:
        """The query's vector (read-only) as a future; cached queries are done at once."""
        inner = self.inner
        if not isinstance(inner, BaseEmbedder):
            raise TypeError(f"{type(inner).__name__} does not batch queries; use embed_query")
        if self._inline():
            return inner.query_future(text)
        return inner.query_future(text, self._start_query)

    def _start_query(self, text: str, caller: str = QUERIES) -> Future[Vector]:
        if caller == QUERIES:
            self.stats.record_call(QUERIES, 1, len(text))
        future: Future[Vector] = Future()
        with self._cond:
            if self._closed:
                future.set_result(self.inner.embed([text])[0])
                return future
            self._queries.append(_Query(text, future, caller))
            self._cond.notify_all()
        return future

    def queued(self) -> int:
        """Texts waiting for a model run now (queries, small embeds and bulk chunks)."""
        with self._cond:
            return len(self._queries) + sum(chunk.end - chunk.start for chunk in self._bulk)

    def _inline(self) -> bool:
        """On the model thread itself (an embedder calling back in) nothing may queue."""
        return threading.current_thread() in self._threads

    def close(self) -> None:
        """Embed what is queued, then end the thread."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        for thread in self._threads:
            thread.join()
        self.stats.close()

    # -- the threads ---------------------------------------------------------------------
    def _take(self, bulk: bool) -> tuple[list[_Query], _Chunk | None] | None:
        """The next run of the bulk thread (a chunk, with every waiting query) or of the
        query thread (the waiting queries); ``None``: closed and nothing left."""
        with self._cond:
            while not (self._bulk if bulk else self._queries) and not self._closed:
                self._cond.wait()
            if bulk and not self._bulk:
                return None
            if not bulk and not self._queries:
                return None
            n = min(len(self._queries), MAX_QUERIES)
            queries = [self._queries.popleft() for _ in range(n)]
            chunk = self._bulk.popleft() if bulk else None
            return queries, chunk

    def _loop(self, bulk: bool) -> None:
        while (taken := self._take(bulk)) is not None:
            queries, chunk = taken
            if chunk is not None and chunk.bulk.future.done():  # an earlier chunk failed
                chunk = None
            if not queries and chunk is None:
                continue
            try:
                matrix = self._run(queries, chunk)
            except Exception:
                if len(queries) + (chunk is not None) > 1:
                    # One caller's text must not fail the others it shared a run with:
                    # run each caller alone (rare: the model fails on a text or is broken).
                    for query in queries:
                        self._settle([query], None)
                    if chunk is not None:
                        self._settle([], chunk)
                    continue
                self._settle(queries, chunk)
                continue
            self._deliver(queries, chunk, matrix)

    def _run(self, queries: list[_Query], chunk: _Chunk | None) -> Matrix:
        texts = [query.text for query in queries] + (chunk.texts if chunk else [])
        callers = [query.caller for query in queries] + (chunk.callers if chunk else [])
        inner = self.inner
        before = inner.thread_counts() if isinstance(inner, BaseEmbedder) else None
        started, cpu = time.perf_counter(), time.thread_time()
        try:
            return inner.embed(texts)
        finally:
            cpu = time.thread_time() - cpu
            seconds = time.perf_counter() - started
            counts = (
                inner.thread_counts().minus(before)
                if isinstance(inner, BaseEmbedder) and before is not None
                else ModelCounts(texts=len(texts))
            )
            bulk = threading.current_thread() is self._threads[0]
            thread: RunThread = "bulk" if bulk else "query"
            self.stats.record_run(thread, Counter(callers), counts, seconds, cpu)
            with self._cond:
                self.runs += 1

    def _settle(self, queries: list[_Query], chunk: _Chunk | None) -> None:
        """Run these callers' texts alone; on failure fail exactly them."""
        texts = [query.text for query in queries] + (chunk.texts if chunk else [])
        try:
            matrix = self._run(queries, chunk)
        except Exception as error:
            log.warning("embedding %d texts failed: %r", len(texts), error)
            for query in queries:
                if query.future.set_running_or_notify_cancel():
                    query.future.set_exception(error)
            if chunk is not None:
                chunk.bulk.future.set_exception(error)
            return
        self._deliver(queries, chunk, matrix)

    @staticmethod
    def _deliver(queries: list[_Query], chunk: _Chunk | None, matrix: Matrix) -> None:
        for i, query in enumerate(queries):
            if query.future.set_running_or_notify_cancel():  # False: its waiter has gone
                query.future.set_result(matrix[i])
        if chunk is not None:
            bulk_job = chunk.bulk
            bulk_job.out[chunk.start : chunk.end] = matrix[len(queries) :]
            bulk_job.remaining -= 1
            if bulk_job.remaining == 0:
                bulk_job.future.set_result(bulk_job.out)
