"""Conversations and messages: writes, newest-first lists and scoped search.

Synchronous functions of a ``Ctx``; ``SQLiteBackend`` runs each on the store's worker
thread inside one transaction, so a failure anywhere writes nothing. Vectors arrive
already computed (``Vectors``): the backend embeds on another thread first, so a long
batch being embedded never holds up other calls' statements.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row, delete, select, text, update

from nams_local.errors import NotFoundError, NotSupportedError
from nams_local.models import (
    Conversation,
    ConversationMetadata,
    ConversationSearchHits,
    Message,
    NewMessage,
    ReasoningStep,
    SearchMode,
    SearchResult,
)

from . import deferred_fts, prepared, role_prior
from . import schema as s
from .conversation_vectors import (
    ConversationVectors,
    read_conversations,
    score_conversations,
    search_conversation,
)
from .dbapi import raw_connection
from .rows import (
    dumps,
    insert_rows,
    loads,
    new_id,
    now,
    to_conversation,
    to_message,
    to_step,
    token_count,
    when,
)
from .search import Ranked, bm25, bm25_rows, candidates, matched, rank, text_score
from .store import Ctx, message_partition
from .text import match_query, message_scope, scope_token, terms
from .vector_lane import QueuedVector
from .vectors import Vector, Vectors

__all__ = [
    "EXTRACTED_ROLES",
    "add_messages",
    "conversation_row",
    "create_conversation",
    "delete_conversation",
    "delete_message",
    "get_conversation",
    "groups_of",
    "list_conversations",
    "list_messages",
    "materialise",
    "publish_vectors",
    "rank_in",
    "search_messages",
    "search_user_messages",
    "shared_text_hits",
    "steps_of",
    "unindex_messages",
    "user_conversations",
]

c, m = s.conversations, s.messages

#: Messages of these roles are extracted and summarised; others (system, tool) are not.
EXTRACTED_ROLES = ("user", "assistant")


def conversation_row(ctx: Ctx, conversation_id: str) -> Any:
    """The conversation's row in this workspace, or ``NotFoundError``."""
    return ctx.row(c, conversation_id, "conversation")


def create_conversation(
    ctx: Ctx, user_id: str | None, metadata: ConversationMetadata | None
) -> Conversation:
    stamp = now()
    values = {
        "id": new_id(),
        "workspace": ctx.workspace,
        "user_id": user_id,
        "metadata": dumps(metadata or {}),
        "message_count": 0,
        "created_at": stamp,
        "updated_at": stamp,
    }
    insert_rows(ctx.conn, c, [values])
    return get_conversation(ctx, str(values["id"]))


def get_conversation(ctx: Ctx, conversation_id: str) -> Conversation:
    return to_conversation(conversation_row(ctx, conversation_id), ctx.workspace)


def list_conversations(ctx: Ctx, user_id: str | None, limit: int) -> list[Conversation]:
    rows = (
        prepared.conversations_of_workspace(ctx.conn, ctx.workspace, limit)
        if user_id is None
        else prepared.conversations_of_user(ctx.conn, ctx.workspace, user_id, limit)
    )
    return [to_conversation(row, ctx.workspace) for row in rows]


def delete_conversation(ctx: Ctx, conversation_id: str) -> None:
    """Idempotent: an id that is not (or no longer) in this workspace changes nothing
    (docs/wire-decisions.md, W2)."""
    row = ctx.find(c, conversation_id)
    if row is None:
        return
    pks = [pk for (pk,) in ctx.conn.execute(select(m.c.pk).where(m.c.conversation_pk == row.pk))]
    unindex_messages(ctx, pks)
    ctx.conn.execute(delete(c).where(c.c.pk == row.pk))


def delete_message(ctx: Ctx, conversation_id: str, message_id: str) -> None:
    """One message out of its conversation (``SupportsMessageDelete``): its row, its search
    entries, its extraction unit and mentions (cascades); the conversation's count drops.
    What was extracted from it stays (entities are shared memory; the inspector deletes
    those separately). Idempotent like ``delete_conversation`` (W2) for a message that is
    gone; an unknown conversation, or a message of another conversation, is a 404 (M1)."""
    conversation = conversation_row(ctx, conversation_id)
    row = ctx.find(m, message_id)
    if row is None:
        return
    if row.conversation_pk != conversation.pk:
        raise NotFoundError(f"message {message_id} is not in conversation {conversation_id}")
    unindex_messages(ctx, [row.pk])
    ctx.conn.execute(delete(m).where(m.c.pk == row.pk))
    ctx.conn.execute(
        update(c)
        .where(c.c.pk == row.conversation_pk, c.c.message_count > 0)
        .values(message_count=c.c.message_count - 1)
    )


def unindex_messages(ctx: Ctx, pks: Sequence[int]) -> None:
    """Drop the messages' full-text and vector entries (their rows stay)."""
    if not pks:
        return
    ctx.conn.execute(text("DELETE FROM messages_fts WHERE rowid = :pk"), [{"pk": pk} for pk in pks])
    if ctx.vectors is not None:
        ctx.vectors.messages.delete(ctx.conn, pks)


#: The hot write path's statements (``dbapi.py``: fixed strings, prepared once).
_TOUCH_CONVERSATION = (
    "UPDATE conversations SET message_count = message_count + ?, updated_at = ? "
    "WHERE id = ? AND workspace = ? RETURNING pk, user_id"
)
_INSERT_MESSAGE = (
    "INSERT INTO messages(id, workspace, conversation_pk, role, content, metadata, "
    "token_count, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_FTS = "INSERT INTO messages_fts(rowid, body, scope) VALUES (?, ?, ?)"
_INSERT_UNIT = "INSERT INTO extraction_units(message_pk, status, attempts) VALUES (?, 'pending', 0)"
_INSERT_VECTOR_QUEUE = "INSERT INTO vector_queue(message_pk) VALUES (?)"


def add_messages(
    ctx: Ctx,
    conversation_id: str,
    messages: Sequence[NewMessage],
    embedded: Vectors | None,
    extract: bool = False,
) -> list[Message]:
    """Write messages (already validated) with their text and vector index entries.

    ``embedded`` ``None`` (with embeddings on) leaves the vectors to the store's vector
    lane, which embeds them in batches once this write has committed.
    ``extract`` queues user and assistant messages for extraction (a ``pending`` unit
    each, in the same transaction, so no message is ever stored without its unit).

    The hot path of every server write, so it runs fixed SQL on the DB-API connection
    (``dbapi.py``). The first statement both checks that the conversation exists in this
    workspace and bumps its counters (``UPDATE ... RETURNING``): a missing conversation
    is refused before anything is written, and no separate lookup (or cache of it, which
    another process's delete could make stale) is needed. The returned messages are built
    from the values written, not read back.
    """
    conn = ctx.conn
    raw = raw_connection(conn)
    stamp = now()
    touched = raw.execute(
        _TOUCH_CONVERSATION, (len(messages), stamp, conversation_id, ctx.workspace)
    ).fetchone()
    if touched is None:
        raise NotFoundError(f"conversation {conversation_id!r} not found")
    conv_pk, user_id = int(touched[0]), touched[1]
    created = when(stamp)
    scope = message_scope(ctx.workspace, user_id, conversation_id)
    stored: list[Message] = []
    pks: list[int] = []
    for msg in messages:
        message_id = new_id()
        metadata = dumps(msg.metadata or {})
        tokens = token_count(msg.content)
        cursor = raw.execute(
            _INSERT_MESSAGE,
            (message_id, ctx.workspace, conv_pk, msg.role, msg.content, metadata, tokens, stamp),
        )
        pks.append(int(cursor.lastrowid))
        stored.append(
            Message(
                id=message_id,
                conversation_id=conversation_id,
                role=msg.role,
                content=msg.content,
                metadata=loads(metadata),
                created_at=created,
                token_count=tokens,
            )
        )
    chars = sum(len(msg.content) for msg in messages)
    if deferred_fts.should_defer(chars):
        deferred_fts.defer(ctx, pks, chars)  # a big bulk: indexed in small units after commit
    else:
        raw.executemany(
            _INSERT_FTS, [(pk, msg.content, scope) for pk, msg in zip(pks, messages, strict=True)]
        )
    if extract:
        units = [
            (pk,) for pk, msg in zip(pks, messages, strict=True) if msg.role in EXTRACTED_ROLES
        ]
        if units:
            raw.executemany(_INSERT_UNIT, units)
    vectors = ctx.vectors
    if vectors is not None:
        part = message_partition(ctx.workspace, user_id)
        if embedded is not None:
            vectors.messages.add(conn, [(pk, part, conversation_id) for pk in pks], embedded)
        else:
            raw.executemany(_INSERT_VECTOR_QUEUE, [(pk,) for pk in pks])
            items = [
                QueuedVector(pk, msg.content, part, conversation_id)
                for pk, msg in zip(pks, messages, strict=True)
            ]
            publish_vectors(ctx, items)
    return stored


def publish_vectors(ctx: Ctx, items: list[QueuedVector]) -> None:
    """Hand the rows (their durable ``vector_queue`` rows are written) to the vector
    lane's in-memory queue once this transaction has committed."""
    lane = ctx.store.vector_lane
    assert lane is not None
    ctx.store.after_commit(lambda: lane.enqueue(items))


def list_messages(ctx: Ctx, conversation_id: str, limit: int) -> list[Message]:
    conv = conversation_row(ctx, conversation_id)
    rows = prepared.messages_newest_first(ctx.conn, conv.pk, limit)
    return [to_message(row, conv.id) for row in rows]


def resolve_mode(has_vectors: bool, mode: SearchMode | None) -> SearchMode:
    """The mode a search runs in: hybrid by default with embeddings, else text."""
    if not has_vectors:
        if mode in ("vector", "hybrid"):
            raise NotSupportedError(
                f"{mode} search needs embeddings; this store was opened with embeddings off"
            )
        return "text"
    return mode or "hybrid"


def rank_in(
    ctx: Ctx,
    conv: Row[Any],
    query: str,
    query_vector: Vector | None,
    limit: int,
    mode: SearchMode,
    weight: float,
    text_hits: list[tuple[int, float]] | None = None,
    vector_hits: list[tuple[int, float]] | None = None,
) -> list[Ranked]:
    """The best ``limit`` message pks (with scores) of one conversation; ``text_hits``:
    its BM25 hits already read (``rank_each``), best first, at least ``candidates(limit)``
    of them or all it has; ``vector_hits`` likewise its nearest messages."""
    conn = ctx.conn
    vectors = ctx.vectors
    match = match_query(query, scope_token("c", conv.id))
    words = terms(query)

    def text_search(k: int) -> list[tuple[int, float]]:
        if text_hits is not None:
            return text_hits[:k]
        deferred_fts.require_indexed(ctx)
        return bm25(
            conn, "messages_fts", match, k, len(words), stats=ctx.store.term_stats, words=words
        )

    vector_search = None
    if vectors is not None and query_vector is not None:
        part = message_partition(ctx.workspace, conv.user_id)

        def vector_search(k: int) -> list[tuple[int, float]]:
            assert vectors is not None and query_vector is not None
            if vector_hits is not None:
                return vector_hits[:k]
            return search_conversation(conn, vectors.messages, query_vector, k, part, conv)

    prior = role_prior.for_query(conn, query)
    return rank(mode, limit, text_search, vector_search, weight, prior)


def shared_text_hits(
    ctx: Ctx, wanted: Sequence[tuple[Row[Any], int]], query: str, mode: SearchMode
) -> dict[int, list[tuple[int, float]]] | None:
    """``rank_each``'s full-text part: one query for several conversations (``bm25_each``),
    ``None`` when each is to query on its own (one conversation, vector mode, too many
    rows). Separate so a turn can run it while its query is still being embedded."""
    if mode == "vector" or len(wanted) < 2:
        return None
    return bm25_each(ctx, wanted, query)


def shared_vectors(
    ctx: Ctx, wanted: Sequence[tuple[Row[Any], int]], mode: SearchMode
) -> ConversationVectors | None:
    """``rank_each``'s vectors of several conversations, read before the query vector is
    needed (``read_conversations``); ``None`` when each searches on its own (one
    conversation, text mode, no vectors). Separate so a turn reads them while its query
    is still being embedded."""
    vectors = ctx.vectors
    if vectors is None or mode == "text" or len(wanted) < 2:
        return None
    return read_conversations(
        ctx.conn,
        vectors.messages,
        [
            (
                conv,
                message_partition(ctx.workspace, conv.user_id),
                limit if mode == "vector" else candidates(limit),
            )
            for conv, limit in wanted
        ],
    )


def rank_each(
    ctx: Ctx,
    wanted: Sequence[tuple[Row[Any], int]],
    query: str,
    query_vector: Vector | None,
    mode: SearchMode,
    weight: float,
    text_hits: dict[int, list[tuple[int, float]]] | None,
    read: ConversationVectors | None = None,
) -> dict[int, list[Ranked]]:
    """``rank_in`` for each ``(conversation, limit)``, keyed by conversation pk; ``text_hits``
    what ``shared_text_hits`` read for them (``None``: each reads its own). Their vector
    searches run together (``search_conversations``: two statements for all of them);
    ``read``: what ``shared_vectors`` read of them already."""
    vector_hits: dict[int, list[tuple[int, float]]] | None = None
    vectors = ctx.vectors
    if vectors is not None and query_vector is not None:
        if read is None:
            read = shared_vectors(ctx, wanted, mode)
        if read is not None:
            vector_hits = score_conversations(ctx.conn, vectors.messages, query_vector, read)
    return {
        conv.pk: rank_in(
            ctx,
            conv,
            query,
            query_vector,
            limit,
            mode,
            weight,
            text_hits=None if text_hits is None else text_hits.get(conv.pk),
            vector_hits=None if vector_hits is None else vector_hits.get(conv.pk),
        )
        for conv, limit in wanted
    }


#: Rows one shared full-text query may return before ``bm25_each`` falls back to one query
#: per conversation (a very long conversation matching most query words).
MAX_SHARED_TEXT_ROWS = 2_000


def bm25_each(
    ctx: Ctx, wanted: Sequence[tuple[Row[Any], int]], query: str
) -> dict[int, list[tuple[int, float]]] | None:
    """Each conversation's BM25 hits (its best ``candidates(limit)``) from one FTS5 query
    over all of them. The same scores as one query each: the scope column weighs 0 in the
    rank (``schema.FTS_RANK``) and every body term's IDF is table-wide either way, so the
    only saving is the work FTS5 repeats per query (reading each term's doclist to count
    it, ~1 ms per query at 10k messages, growing with the table; ``fts_bm25`` scores a
    match of few rows without it). ``None`` when the
    conversations match more rows than ``MAX_SHARED_TEXT_ROWS`` (callers query one by
    one) or the query has no searchable word (nothing to find)."""
    words = terms(query)
    by_token = {scope_token("c", conv.id): conv.pk for conv, _ in wanted}
    body = match_query(query)
    if body is None:
        return {conv.pk: [] for conv, _ in wanted}
    deferred_fts.require_indexed(ctx)
    tokens = " OR ".join(f'"{token}"' for token in by_token)
    match = f"scope : ({tokens}) AND {body}"
    rows = bm25_rows(
        ctx.conn,
        "messages_fts",
        match,
        MAX_SHARED_TEXT_ROWS + 1,
        stats=ctx.store.term_stats,
        words=words,
        extra=", scope",
    )
    if len(rows) > MAX_SHARED_TEXT_ROWS:
        return None
    want = {conv.pk: candidates(limit) for conv, limit in wanted}
    hits: dict[int, list[tuple[int, float]]] = {conv.pk: [] for conv, _ in wanted}
    n = max(1, len(words))
    for pk, score, marked, scope in rows:
        conv_pk = next((by_token[t] for t in str(scope).split() if t in by_token), None)
        if conv_pk is None or len(hits[conv_pk]) >= want[conv_pk]:
            continue
        hits[conv_pk].append((int(pk), text_score(float(score) / n, matched(marked) / n)))
    return hits


def materialise(ctx: Ctx, ranked: dict[int, list[Ranked]]) -> dict[int, list[Message]]:
    """Messages for ranked pks of several conversations (keyed by conversation pk), in one
    query, in rank order."""
    pks = [r.pk for hits in ranked.values() for r in hits]
    if not pks:
        return {conv_pk: [] for conv_pk in ranked}
    rows = {row.pk: row for row in prepared.messages_by_pks(ctx.conn, pks)}
    return {
        conv_pk: [
            to_message(rows[r.pk], rows[r.pk].conv_id, r.score)
            for r in hits
            if r.pk in rows and rows[r.pk].conversation_pk == conv_pk
        ]
        for conv_pk, hits in ranked.items()
    }


def search_messages(
    ctx: Ctx,
    conversation_id: str,
    query: str,
    query_vector: Vector | None,
    limit: int,
    mode: SearchMode,
    weight: float,
) -> SearchResult[Message]:
    conv = conversation_row(ctx, conversation_id)
    ranked = {conv.pk: rank_in(ctx, conv, query, query_vector, limit, mode, weight)}
    return SearchResult[Message](items=materialise(ctx, ranked)[conv.pk], search_type=mode)


def user_conversations(
    ctx: Ctx, user_id: str, limit: int, exclude_conversation_id: str | None
) -> list[Row[Any]]:
    """The user's ``limit`` most recently updated conversations but the excluded one."""
    convs = prepared.conversations_of_user(ctx.conn, ctx.workspace, user_id, limit + 1)
    return [conv for conv in convs if conv.id != exclude_conversation_id][:limit]


def steps_of(ctx: Ctx, convs: Sequence[Row[Any]]) -> dict[int, list[ReasoningStep]]:
    """The reasoning steps of each conversation (keyed by pk), oldest first, in one query."""
    steps: dict[int, list[ReasoningStep]] = {conv.pk: [] for conv in convs}
    if not convs:
        return steps
    by_pk = {conv.pk: conv.id for conv in convs}
    for row in prepared.steps_of_conversations(ctx.conn, list(by_pk)):
        steps[row.conversation_pk].append(to_step(row, by_pk[row.conversation_pk]))
    return steps


def search_user_messages(
    ctx: Ctx,
    user_id: str,
    query: str,
    query_vector: Vector | None,
    conversation_limit: int,
    per_conversation_limit: int,
    exclude_conversation_id: str | None,
    include_steps: bool,
    weight: float,
) -> list[ConversationSearchHits]:
    """Per-conversation searches for one user, in one transaction (same hits as one by one)."""
    run_mode = resolve_mode(ctx.vectors is not None, None)
    convs = user_conversations(ctx, user_id, conversation_limit, exclude_conversation_id)
    wanted = [(conv, per_conversation_limit) for conv in convs]
    text_hits = shared_text_hits(ctx, wanted, query, run_mode)
    ranked = rank_each(ctx, wanted, query, query_vector, run_mode, weight, text_hits)
    messages = materialise(ctx, ranked)
    steps = steps_of(ctx, convs) if include_steps else {conv.pk: [] for conv in convs}
    return groups_of(convs, messages, steps, run_mode)


def groups_of(
    convs: Sequence[Row[Any]],
    messages: dict[int, list[Message]],
    steps: dict[int, list[ReasoningStep]],
    mode: SearchMode,
) -> list[ConversationSearchHits]:
    """Each conversation's share of a cross-conversation search, in ``convs`` order."""
    return [
        ConversationSearchHits(
            conversation_id=conv.id,
            messages=messages[conv.pk],
            steps=steps[conv.pk],
            search_type=mode,
        )
        for conv in convs
    ]
