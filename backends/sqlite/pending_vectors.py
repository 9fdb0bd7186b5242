"""Read-your-writes without waiting for the vector lane: a search embeds its scope's few
pending messages together with its query and scores them exactly.

Why: a message is acknowledged before its vector is in the index (``vector_lane``), and a
vector search must still find it. Waiting until the lane has embedded *and stored* the
scope's rows made a search's latency the lane's: a batch of up to 64 messages embedded
beside the other work, then a writer unit. Under the load mix that put conversation
search at p50 235 / p95 1,471 ms while the query alone took a few milliseconds.

Here a conversation search takes the rows pending in its conversation (``VectorLane.
queued_in``; at most ``MAX_PENDING_ROWS``), hands their texts (whole text and passages,
as the lane would embed them: ``passages.flatten``) to the query thread in the same model
run as the query (``EmbeddingBatcher.embed_soon``), and scores those vectors by brute
force beside the index's hits (``conversation_vectors.search_conversation``). The vectors
are then given to the lane (``VectorLane.provide``), which stores them instead of
embedding the same texts again: the overlay costs no extra model work. Rows another
search already embedded are reused from the lane. A row the lane happens to be embedding
at that moment is embedded twice (the lane cannot take it back); a row stored meanwhile
is found twice and keeps one score (the same vector).

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
from .vector_lane import VectorLane
from .vectors import Vector

__all__ = ["MAX_PENDING_ROWS", "query_with_pending"]

#: Most pending rows of one conversation a search embeds itself (more: it waits).
MAX_PENDING_ROWS = 16


async def _result(future: Future[Matrix]) -> Matrix:
    if not future.done():  # shielded: a query future is shared with identical queries
        await asyncio.shield(asyncio.wrap_future(future))
    return future.result()


async def query_with_pending(
    batcher: EmbeddingBatcher, lane: VectorLane, query: str, key: str
) -> tuple[Vector, PendingVectors] | None:
    """The query's vector and the vectors of the rows pending under ``key``, from one
    model run (see the module docstring); ``None`` when the caller should wait for the
    lane instead: nothing is pending, too much is, or queries are not batched."""
    if not batcher.batches_queries:
        return None
    queued = lane.queued_in(key, MAX_PENDING_ROWS)
    if not queued:
        return None
    missing = [(seq, item.text) for seq, item, made in queued if made is None]
    query_future = batcher.query(query)
    made_now: Future[Matrix] | None = None
    dim = batcher.dimension
    flat, parts = flatten([text for _, text in missing])
    if missing:
        made_now = batcher.embed_soon(flat)
        seqs = [seq for seq, _ in missing]

        def hand_over(done: Future[Matrix]) -> None:
            # Even if this search has gone, the lane need not embed these texts again.
            if done.exception() is None:
                wide = widen(done.result(), parts, dim)
                lane.provide({seq: wide[i] for i, seq in enumerate(seqs)})

        made_now.add_done_callback(hand_over)
    vector = (await _result(query_future)).copy()
    fresh = iter(widen(await _result(made_now), parts, dim) if made_now is not None else ())
    rows = [made if made is not None else next(fresh) for _, _, made in queued]
    pks = [item.pk for _, item, _ in queued]
    return vector, PendingVectors(pks, np.stack(rows))
