"""Read-your-writes without waiting for the vector lane: a search embeds its scope's few
pending messages together with its query and scores them exactly.

Why: a message is acknowledged before its vector is in the index (``vector_lane``), and a
vector search must still find it. Waiting until the lane has embedded *and stored* the
scope's rows made a search's latency the lane's: a batch of up to 64 messages embedded
beside the other work, then a writer unit. Under the load mix that put conversation
search at p50 235 / p95 1,471 ms while the query alone took a few milliseconds.

Here a conversation search takes the rows pending in its conversation (at most
``MAX_PENDING_ROWS``, ``VectorLane.overlay``), hands their texts (whole text and
passages, as the lane would embed them: ``passages.flatten``) to the query thread in the
same model run as its query (``EmbeddingBatcher.embed_soon``), and scores those vectors
by brute force beside the index's hits (``conversation_vectors.search_conversation``).
The lane keeps the vectors and stores them instead of embedding the same texts again, so
the overlay costs no extra model work; a row another search is embedding or has embedded
is shared, not embedded again (the claim is taken under the lane's lock). A row the lane
is embedding at that moment is embedded twice (the lane cannot take it back); a row
stored meanwhile is found twice and keeps one score (the same vector).

More pending rows than ``MAX_PENDING_ROWS`` in the conversation (a bulk ingest into it)
keep the wait for the lane (``VectorLane.settled``): that many texts are bulk work, not
something to put in front of every waiting query. Cross-conversation searches (a user's
partition) keep the wait too.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import Future

import numpy as np

from nams_local.embeddings import Matrix

from .conversation_vectors import PendingVectors
from .embedding_batcher import EmbeddingBatcher
from .passages import flatten, widen
from .vector_lane import QueuedVector, VectorLane
from .vectors import Vector, Vectors

__all__ = ["MAX_PENDING_ROWS", "query_with_pending"]

#: Most pending rows of one conversation a search embeds itself (more: it waits). A chat's
#: read-your-writes case is its last turn or two; with 16, searches in freshly seeded
#: conversations put up to 10 long messages each at queries' priority beside the lane's
#: own run, both cores went to the model and adds waited for the writer (add p50 106 ms
#: -> 5.7 s on a busy box).
MAX_PENDING_ROWS = 4


async def _result(future: Future[Matrix]) -> Matrix:
    if not future.done():  # shielded: the future is shared with other searches
        await asyncio.shield(asyncio.wrap_future(future))
    return future.result()


def _embed_rows(batcher: EmbeddingBatcher, items: list[QueuedVector]) -> Future[Vectors]:
    """The message embedder's rows for ``items`` (whole text and passages, as the lane
    would make them), embedded at queries' priority: done with the query's run."""
    flat, parts = flatten([item.text for item in items])
    rows: Future[Vectors] = Future()

    def widened(done: Future[Matrix]) -> None:
        error = done.exception()
        if error is not None:
            rows.set_exception(error)
        else:
            rows.set_result(widen(done.result(), parts, batcher.dimension))

    batcher.embed_soon(flat).add_done_callback(widened)
    return rows


async def query_with_pending(
    batcher: EmbeddingBatcher, lane: VectorLane, query: str, key: str
) -> tuple[Vector, PendingVectors] | None:
    """The query's vector and the vectors of the rows pending under ``key``, from one
    model run (see the module docstring); ``None`` when the caller should wait for the
    lane instead: nothing is pending, too much is, or queries are not batched."""
    if not batcher.batches_queries or not lane.has_pending([key]):
        return None
    query_future = batcher.query(query)  # first: the pending texts join its run
    rows = lane.overlay(key, MAX_PENDING_ROWS, lambda items: _embed_rows(batcher, items))
    if not rows:
        return None
    vector = (await _result(query_future)).copy()
    vectors = [
        made if not isinstance(made, Future) else (await _result(made))[i] for _, made, i in rows
    ]
    return vector, PendingVectors([item.pk for item, _, _ in rows], np.stack(vectors))
