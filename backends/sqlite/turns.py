"""One chat turn's reads in two reader jobs run at once (``SQLiteBackend.recall_turn``).

Source by source, a turn is seven or eight units of work (``nams_local.turns``): each
waits for a thread, looks up the conversation again, and the steps of the current and
the other conversations are read separately. Here a turn is two reader jobs, submitted
together so they run on two reader threads at once: ``turn_message_reads`` (the current
conversation's hits and steps, the other conversations' hits and steps, messages and
steps each read in one query) and ``turn_entity_reads`` (the long-term entity hits, the
user's own entity and the relationships of all of them, which graph expansion needs).
Entity vector search runs against the snapshot the writer published
(``entity_snapshots.py``), so a turn never waits behind the writer (the previous turn's
extraction, another tenant's bulk write).

**Decided: two jobs, not one.** One job read everything in one transaction, one source
after the other: ~10 ms of reader time at 100k messages, of which the entity half (its
full-text query over the workspace's entities, ranking, relationships) was ~3-4 ms. SQLite
runs a statement without holding the GIL, so on two cores the halves overlap: measured
turn by turn on the 100k ``turn`` store, interleaved in one process, retrieval p50 8.2 vs
12.1 ms (p95 12.1 vs 14.9); at 10k 10.0 vs 10.5 (the message half is most of it there).
Each half reads in one transaction of its own: the two see the file as it was at nearly
the same moment, not at the same one (an entity extracted from a message committed in
between may show while that message does not), which a turn's merge of five sources
never relied on.

The query vector arrives as a ``VectorSource``: the turn's SQL that needs no vector (the
conversation and the user's other conversations, their steps, the full-text hits of
messages and entities, and the conversations' message vectors, read but not yet scored)
runs first, while the model is still embedding the query on its
own thread (``SQLiteBackend.recall_turn`` starts it and submits the jobs at once), and
only then does a job wait for the vector. A turn costs the longer of the two, not their
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
from .inline_reads import reader_thread
from .rows import to_entity
from .search import candidates, vector_candidates
from .store import Ctx
from .vectors import Vector

__all__ = [
    "QUERY_WAIT_SECONDS",
    "PendingVector",
    "TurnEntities",
    "TurnMessages",
    "VectorSource",
    "early_entity_knn",
    "pending_vector",
    "ready_vector",
    "turn_entity_reads",
    "turn_message_reads",
]

T = TypeVar("T")

#: The user's own entity, as ``retrieval`` asks for it source by source.
USER_QUERY, USER_TYPE = "me", "person"

#: How long a turn's reader jobs wait for the query vector at most. The model runs one
#: batch of queries at a time (milliseconds); this bound only matters when it is stuck,
#: and then the turn fails (retrieval logs it and the model call goes on without memory)
#: rather than holding a reader thread.
QUERY_WAIT_SECONDS = 10.0

#: A query vector a reader job asks for once its vector-free SQL has run (``None``: the
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


@reader_thread  # waits for the query vector, beside turn_entity_reads
def turn_message_reads(
    ctx: Ctx,
    request: TurnRequest,
    query_vector: VectorSource,
    mode: SearchMode,
    weight: float,
) -> TurnMessages:
    """The turn's messages and steps, in one transaction: first what needs no query vector
    (the conversations, their steps, the messages' full-text hits, the conversations'
    message vectors read but not yet scored), then, with the vector, the rest."""
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
    # Vector-free: runs while the model embeds the query.
    message_text = shared_text_hits(ctx, wanted, query, mode)
    steps = steps_of(ctx, [conv, *others])
    message_vectors = shared_vectors(ctx, wanted, mode)  # the rows, not yet their scores
    # With the vector.
    vector = query_vector()
    ranked = rank_each(ctx, wanted, query, vector, mode, weight, message_text, message_vectors)
    messages = materialise(ctx, ranked)
    return TurnMessages(
        messages=messages[conv.pk],
        steps=steps[conv.pk],
        cross_session=groups_of(others, messages, steps, mode),
    )


@reader_thread  # waits for the query vector, beside turn_message_reads
def turn_entity_reads(
    ctx: Ctx,
    request: TurnRequest,
    query_vector: VectorSource,
    user_vector: VectorSource,
    mode: SearchMode,
    weight: float,
) -> TurnEntities:
    """The turn's entities, the user's own and the relationships of all of them (which
    graph expansion needs), in one transaction: the full-text hits while the model embeds
    the query (the vector search starts on the model's thread as soon as the vector
    exists, ``early_entity_knn``), then the ranking."""
    query = request.query
    entity_knn = early_entity_knn(ctx, query_vector, request.entity_limit, mode)
    text = mode != "vector"
    entity_text = (
        entity_text_hits(ctx, query, None, candidates(request.entity_limit)) if text else None
    )
    user_text = (
        entity_text_hits(ctx, USER_QUERY, USER_TYPE, candidates(1))
        if text and request.user_entity
        else None
    )
    found = ranked_entities(
        ctx,
        query,
        query_vector(),
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
    return TurnEntities(
        entities=[to_entity(row, score) for row, score in found],
        user=user,
        details=details_of(ctx, rows),
    )
