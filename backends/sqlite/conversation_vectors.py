"""Vector search within one conversation: an exact scan of its own vectors.

Message vectors are partitioned by user (``vectors.py``), so a search scoped to one
conversation was a KNN over the user's whole partition filtered to the conversation
(``sub``): its cost grows with everything the user ever said, while a conversation holds
a few dozen messages. Here the conversation's vectors are read by their keys — the
conversation's message pks (``ix_messages_conversation``) and their passage rows
(``passages.STRIDE``) — and scored exactly with one numpy product: the cost follows the
conversation, not the user or the store.

With sqlite-vec the vectors are read from the ``vec0`` table's storage tables
(``<table>_rowids``: row → chunk and offset; ``<table>_vector_chunks00``: the chunk's
packed float32 vectors), because ``vec0`` answers ``rowid IN (...)`` with a full scan.
That layout is sqlite-vec's (0.1.x); it is checked once per process and, if it is not
what this module reads, or the conversation is very long, the search is the KNN it
replaces. The numpy index already reads a conversation by its ``(part, sub)`` index.
Scores are the same cosine similarities either way (a zero vector scores 0, as there).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import Connection, Row

from .dbapi import raw_connection
from .passages import MAX_PASSAGES, STRIDE
from .vectors import VectorIndex

__all__ = [
    "MAX_EXACT_MESSAGES",
    "ConversationVectors",
    "exact_scan_available",
    "read_conversations",
    "score_conversations",
    "search_conversation",
    "search_conversations",
]

#: Longer conversations are searched by KNN (their exact scan would read more than it saves).
MAX_EXACT_MESSAGES = 2000

_OFFSETS = " UNION ALL ".join(f"SELECT {j * STRIDE} AS off" for j in range(1 + MAX_PASSAGES))
_LAYOUT_COLUMNS = {
    "rowids": {"rowid", "id", "chunk_id", "chunk_offset"},
    "vector_chunks00": {"rowid", "vectors"},
}


def search_conversation(
    conn: Connection,
    index: VectorIndex,
    vector: NDArray[np.float32],
    k: int,
    part: str,
    conversation: Row[Any],
) -> list[tuple[int, float]]:
    """The ``k`` messages of ``conversation`` (its row) whose whole text or a passage is
    most similar to ``vector``, as ``(pk, cosine similarity)``, most similar first."""
    return search_conversations(conn, index, vector, [(conversation, part, k)])[
        int(conversation.pk)
    ]


def search_conversations(
    conn: Connection,
    index: VectorIndex,
    vector: NDArray[np.float32],
    wanted: Sequence[tuple[Row[Any], str, int]],
) -> dict[int, list[tuple[int, float]]]:
    """``search_conversation`` for each ``(conversation row, partition, k)``, keyed by
    conversation pk: the exact scans of all of them in two statements (where the rows
    are, then their chunks), not two or three per conversation, which is what a turn's
    current and cross-session conversations cost before."""
    return score_conversations(conn, index, vector, read_conversations(conn, index, wanted))


@dataclass(frozen=True, slots=True)
class ConversationVectors:
    """What ``search_conversations`` reads before it needs the query vector: the vectors
    of the conversations it scans exactly, and the conversations it leaves to the KNN.

    Separate so a chat turn reads them while its query is still being embedded
    (``turns.turn_message_reads``): only the products are left for after the vector arrives.
    """

    #: Conversation pk -> the best ``k`` wanted, for the exact scans.
    exact: dict[int, int]
    #: ``(conversation pk, vector rowid, chunk id, offset in the chunk)`` of their rows.
    located: list[tuple[int, int, int, int]]
    #: The chunks those rows are in, as packed float32 vectors.
    chunks: dict[int, NDArray[np.float32]]
    #: ``(conversation row, partition, k)`` searched by the index's KNN instead.
    knn: list[tuple[Row[Any], str, int]]


def read_conversations(
    conn: Connection, index: VectorIndex, wanted: Sequence[tuple[Row[Any], str, int]]
) -> ConversationVectors:
    """The vectors of ``wanted``'s conversations (see ``ConversationVectors``)."""
    exact: dict[int, int] = {}
    knn: list[tuple[Row[Any], str, int]] = []
    for conversation, part, k in wanted:
        if (
            index.kind != "sqlite-vec"
            or int(conversation.message_count or 0) > MAX_EXACT_MESSAGES
            or not exact_scan_available(conn, index.table)
        ):
            knn.append((conversation, part, k))
        else:
            exact[int(conversation.pk)] = k
    if not exact:
        return ConversationVectors(exact, [], {}, knn)
    raw = raw_connection(conn)
    table = index.table
    marks = ", ".join("?" * len(exact))
    located = [
        (int(conv_pk), int(rowid), int(chunk_id), int(offset))
        for conv_pk, rowid, chunk_id, offset in raw.execute(
            f"WITH p AS ({_OFFSETS}) SELECT m.conversation_pk, r.rowid, r.chunk_id, "
            f'r.chunk_offset FROM messages AS m JOIN p JOIN "{table}_rowids" AS r '
            f"ON r.rowid = m.pk + p.off WHERE m.conversation_pk IN ({marks})",
            tuple(exact),
        ).fetchall()
    ]
    chunk_ids = sorted({row[2] for row in located})
    chunks: dict[int, NDArray[np.float32]] = {}
    if chunk_ids:
        marks = ", ".join("?" * len(chunk_ids))
        chunks = {
            int(chunk_id): np.frombuffer(blob, dtype=np.float32)
            for chunk_id, blob in raw.execute(
                f'SELECT rowid, vectors FROM "{table}_vector_chunks00" WHERE rowid IN ({marks})',
                tuple(chunk_ids),
            ).fetchall()
        }
    return ConversationVectors(exact, located, chunks, knn)


def score_conversations(
    conn: Connection,
    index: VectorIndex,
    vector: NDArray[np.float32],
    read: ConversationVectors,
) -> dict[int, list[tuple[int, float]]]:
    """``search_conversations``' answer from what ``read_conversations`` read."""
    out = {
        int(conversation.pk): index.search(conn, vector, k, part, conversation.id)
        for conversation, part, k in read.knn
    }
    dim = int(vector.shape[0])
    keys: dict[int, list[int]] = {pk: [] for pk in read.exact}
    rows: dict[int, list[NDArray[np.float32]]] = {pk: [] for pk in read.exact}
    for conv_pk, rowid, chunk_id, offset in read.located:
        chunk = read.chunks.get(chunk_id)
        at = offset * dim
        if chunk is None or at + dim > chunk.shape[0]:
            continue
        keys[conv_pk].append(rowid % STRIDE)
        rows[conv_pk].append(chunk[at : at + dim])
    query = np.ascontiguousarray(vector, dtype=np.float32)
    for conv_pk, k in read.exact.items():
        out[conv_pk] = _best(keys[conv_pk], rows[conv_pk], query, k)
    return out


def _best(
    keys: list[int], rows: list[NDArray[np.float32]], vector: NDArray[np.float32], k: int
) -> list[tuple[int, float]]:
    """The ``k`` best messages by their best row (whole text or passage)."""
    if not rows:
        return []
    sims = _cosine(np.stack(rows), vector)
    best: dict[int, float] = {}
    for pk, similarity in zip(keys, sims.tolist(), strict=True):
        if similarity > best.get(pk, -2.0):
            best[pk] = similarity
    # Ties in row order, as the KNN's scan returns them (oldest first).
    ranked = sorted(best.items(), key=lambda item: (-item[1], item[0]))
    return ranked[:k]


def _cosine(matrix: NDArray[np.float32], vector: NDArray[np.float32]) -> NDArray[np.float32]:
    """Cosine similarity of each row with ``vector``; 0 where either is all zeros.
    ``einsum`` rather than BLAS, for the reason ``vectors._similarities`` gives."""
    dots: NDArray[np.float32] = np.einsum("ij,j->i", matrix, vector, optimize=False)
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix, optimize=False)) * float(
        np.sqrt(np.dot(vector, vector))
    )
    out: NDArray[np.float32] = np.divide(
        dots, norms, out=np.zeros_like(dots), where=norms > 0
    ).astype(np.float32)
    return out


#: ``exact_scan_available``'s answer per table (one sqlite-vec per process: it cannot change).
_KNOWN: dict[str, bool] = {}


def exact_scan_available(conn: Connection, table: str) -> bool:
    """Whether ``table``'s storage tables have the columns this module reads."""
    known = _KNOWN.get(table)
    if known is None:
        known = all(
            wanted
            <= {
                str(row[1])
                for row in conn.exec_driver_sql(f'PRAGMA table_info("{table}_{suffix}")')
            }
            for suffix, wanted in _LAYOUT_COLUMNS.items()
        )
        _KNOWN[table] = known
    return known
