"""One chat turn's reads in one unit of work (``SQLiteBackend.recall_turn``).

Source by source, a turn is seven or eight units of work (``nams_local.turns``): each
waits for a thread, looks up the conversation again, and the steps of the current and
the other conversations are read separately. Here everything a turn reads is one reader
job (``turn_reads``): the current conversation's hits and steps, the other conversations'
hits and steps (messages and steps each read in one query), the long-term entity hits, the
user's own entity and the relationships of all of them, which graph expansion needs.
Entity vector search runs on the reader against the snapshot the writer published
(``entity_snapshots.py``), so a turn never waits behind the writer (the previous turn's
extraction, another tenant's bulk write).

The query vector arrives as a ``VectorSource``: the turn's SQL that needs no vector (the
conversation and the user's other conversations, their steps, the full-text hits of
messages and entities, and the conversations' message vectors, read but not yet scored)
runs first, while the model is still embedding the query on its
own thread (``SQLiteBackend.recall_turn`` starts it and submits this job at once), and
only then does the job wait for the vector. A turn costs the longer of the two, not their
sum: on the 100k ``turn`` store the text SQL is ~3-4 ms of CPU and the model ~3-5 ms.
The wait is bounded (``QUERY_WAIT_SECONDS``) because it holds a reader thread.

With int8 products the model is done before the text SQL (a query ~1.5-3 ms), so the
entity vector search does not wait for the SQL either: ``early_entity_knn`` runs it on
the model's thread the moment the vector exists, against the snapshot the job's read
transaction sees, and the job picks up its hits (measured turn by turn on the 100k store,
interleaved in one process: reader job p50 9.94 vs 10.49 and 10.42 vs 11.60 ms).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import TypeVar

from nams_local.errors import BackendUnavailableError, NotFoundError
from nams_local.models import (
    ConversationSearchHits,
    Entity,
    EntityDetails,
    Message,
    ReasoningStep,
    SearchMode,
)
from nams_local.turns import TurnRequest

from . import schema as s
from .conversations import (
    groups_of,
    materialise,
    rank_each,
    shared_text_hits,
    shared_vectors,
    steps_of,
    user_conversations,
)
from .entities import details_of, entity_text_hits, ranked_entities
from .rows import to_entity
from .search import candidates, vector_candidates
from .store import Ctx
from .vectors import Vector

__all__ = [
    "QUERY_WAIT_SECONDS",
    "PendingVector",
    "TurnEntities",
    "TurnMessages",
    "TurnReads",
    "VectorSource",
    "early_entity_knn",
    "pending_vector",
    "ready_vector",
    "turn_reads",
]

T = TypeVar("T")

#: The user's own entity, as ``retrieval`` asks for it source by source.
USER_QUERY, USER_TYPE = "me", "person"

#: How long a turn's reader job waits for its query vector at most. The model runs one
#: batch of queries at a time (milliseconds); this bound only matters when it is stuck,
#: and then the turn fails (retrieval logs it and the model call goes on without memory)
#: rather than holding a reader thread.
QUERY_WAIT_SECONDS = 10.0

#: A query vector the reader job asks for once its vector-free SQL has run (``None``: the
#: turn searches text only).
VectorSource = Callable[[], Vector | None]


def ready_vector(vector: Vector | None) -> VectorSource:
    """A vector already computed (or none)."""
    return lambda: vector


class PendingVector:
    """The vector the model is computing (a ``VectorSource``): waited for (bounded) when
    the job needs it; a copy, as the cached vector is shared."""

    __slots__ = ("_future",)

    def __init__(self, future: Future[Vector]) -> None:
        self._future = future

    def __call__(self) -> Vector:
        return _bounded(self._future, "the query embedding").copy()

    def then(self, fn: Callable[[Vector], T]) -> Future[T]:
        """``fn(vector)`` as soon as the vector exists: on the model's thread right after
        its run (idle then, while the reader job is still in its text SQL), or on this
        thread at once when the vector is already there. ``fn`` must only read it."""
        out: Future[T] = Future()

        def run(done: Future[Vector]) -> None:
            if not out.set_running_or_notify_cancel():
                return
            try:
                out.set_result(fn(done.result()))
            except BaseException as error:  # the job's wait raises it
                out.set_exception(error)

        self._future.add_done_callback(run)
        return out


def pending_vector(future: Future[Vector]) -> PendingVector:
    """The vector the model is computing (``PendingVector``)."""
    return PendingVector(future)


def _bounded(future: Future[T], what: str) -> T:
    """``future``'s result, waited for at most ``QUERY_WAIT_SECONDS``."""
    try:
        return future.result(timeout=QUERY_WAIT_SECONDS)
    except FutureTimeout:
        raise BackendUnavailableError(f"{what} took more than {QUERY_WAIT_SECONDS:g} s") from None


def early_entity_knn(
    ctx: Ctx, query_vector: VectorSource, limit: int, mode: SearchMode
) -> Future[list[tuple[int, float]]] | None:
    """The turn's entity vector search, begun as soon as the query vector exists.

    Why: the model now embeds a query in less time than the turn's text SQL takes, so the
    vector waits while the reader works; the search over the workspace's entity snapshot
    (an in-memory product, ~1 ms at 10k entities) then runs on the model's thread beside
    the reader's SQL instead of after it. The snapshot is the one the job's own read
    transaction sees (``SnapshotIndex.committed``), so the hits are what the search would
    have found in the job. ``None`` when there is nothing to begin early (no vectors, text
    mode, a vector already computed, a unit of work on the writer)."""
    vectors = ctx.vectors
    if (
        vectors is None
        or mode == "text"
        or ctx.connection is None
        or not isinstance(query_vector, PendingVector)
    ):
        return None
    snapshot = vectors.entities.committed(ctx.conn, ctx.workspace)
    k = vector_candidates(mode, limit)
    return query_vector.then(lambda vector: snapshot.search(vector, k, None))


@dataclass(frozen=True, slots=True)
class TurnMessages:
    messages: list[Message]
    steps: list[ReasoningStep]
    cross_session: list[ConversationSearchHits]


@dataclass(frozen=True, slots=True)
class TurnEntities:
    entities: list[Entity]
    user: Entity | None
    details: dict[str, EntityDetails]


@dataclass(frozen=True, slots=True)
class TurnReads:
    messages: TurnMessages
    entities: TurnEntities


def turn_reads(
    ctx: Ctx,
    request: TurnRequest,
    query_vector: VectorSource,
    user_vector: VectorSource,
    mode: SearchMode,
    weight: float,
) -> TurnReads:
    """Everything the turn reads, in one transaction (one consistent view of the file):
    first what needs no query vector, then, with the vector, the rest."""
    conv = ctx.find(s.conversations, request.conversation_id)
    if conv is None:
        raise NotFoundError(f"conversation {request.conversation_id!r} not found")
    query = request.query
    others = (
        user_conversations(ctx, request.user_id, request.conversation_limit, conv.id)
        if request.user_id is not None and request.conversation_limit > 0
        else []
    )
    wanted = [(conv, request.message_limit)]
    wanted += [(other, request.per_conversation_limit) for other in others]
    entity_knn = early_entity_knn(ctx, query_vector, request.entity_limit, mode)
    # Vector-free: runs while the model embeds the query.
    message_text = shared_text_hits(ctx, wanted, query, mode)
    steps = steps_of(ctx, [conv, *others])
    text = mode != "vector"
    entity_text = (
        entity_text_hits(ctx, query, None, candidates(request.entity_limit)) if text else None
    )
    user_text = (
        entity_text_hits(ctx, USER_QUERY, USER_TYPE, candidates(1))
        if text and request.user_entity
        else None
    )
    message_vectors = shared_vectors(ctx, wanted, mode)  # the rows, not yet their scores
    # With the vector.
    vector = query_vector()
    ranked = rank_each(ctx, wanted, query, vector, mode, weight, message_text, message_vectors)
    messages = materialise(ctx, ranked)
    found = ranked_entities(
        ctx,
        query,
        vector,
        None,
        request.entity_limit,
        mode,
        weight,
        entity_text,
        None if entity_knn is None else _bounded(entity_knn, "the entity vector search"),
    )
    rows = [row for row, _ in found]
    user: Entity | None = None
    if request.user_entity:
        mine = ranked_entities(
            ctx, USER_QUERY, user_vector(), USER_TYPE, 1, mode, weight, user_text
        )
        if mine:
            row, score = mine[0]
            user = to_entity(row, score)
            rows.append(row)
    return TurnReads(
        messages=TurnMessages(
            messages=messages[conv.pk],
            steps=steps[conv.pk],
            cross_session=groups_of(others, messages, steps, mode),
        ),
        entities=TurnEntities(
            entities=[to_entity(row, score) for row, score in found],
            user=user,
            details=details_of(ctx, rows),
        ),
    )
