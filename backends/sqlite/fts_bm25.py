"""FTS5's ``bm25()`` without its per-query document counts.

FTS5 computes each query term's IDF at every query by reading the term's whole doclist
(how many rows hold it). At 100k messages that was most of a conversation's full-text
search, and the one part that grew with the table: a search of one 10-message
conversation cost 1.7-1.9 ms at p95 in its BM25 query at 100k messages against 0.8 ms at
10k (issue 13 asks for a conversation's search at 100k within 1.3x of 10k). Everything
else such a search reads is the conversation's own rows.

So for the scoped queries that return few rows, the same formula runs here, in Python,
over the rows the ``MATCH`` returned (``ranked_rows``):

* the row count and average row length from FTS5's averages record (one point read);
* each row's length from the table's docsize rows;
* each term's document count from a snapshot of the table's vocabulary (an ``fts5vocab``
  table, ``schema.FTS_VOCAB_DDL``) plus the rows added since that hold it (a seek to the
  snapshot's last rowid in the term's doclist, all terms in one statement). The snapshot
  is read once per store and table, and again once ``STALE_SHARE`` of the table was added
  or deleted since; a term in fewer than ``SNAPSHOT_MIN_ROWS`` rows is left out of it
  and counted in full when asked for (a small count);
* each term's frequency in a row from ``highlight()``'s marks, a mark counted for the
  query term whose tokens it has. The tokens come from SQLite's own porter tokenizer (an
  in-memory FTS5 table, ``Tokens``), so they are the tokens in the index.

The scores are ``bm25(table, 1.0, 0.0)``'s (tests compare them to 1e-9), as long as no row
was deleted since the snapshot: deleted rows are not subtracted, so until the next read a
count may be high by as many rows as were deleted (at most ``STALE_SHARE`` of the table).

What it costs: one vocabulary read per ``STALE_SHARE`` of growth (110 ms at the 100k
``turn`` store's 125k rows), which a file store runs on a reader thread of its own, off
every search's path (``TermStats``: meanwhile a search without a snapshot is ranked by
FTS5, one with a stale snapshot counts from it), and memory for the terms of
``SNAPSHOT_MIN_ROWS`` rows or more. Two kinds of query keep FTS5's own ranking: those
whose terms are in fewer than ``MIN_POSTINGS`` rows together (a small table, rare words:
FTS5's counting is then cheaper than scoring here), and those whose match returns more
than ``MAX_SCORED_ROWS`` rows (``highlight()`` on every matched row would cost more than
the counts saved).
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import sqlean.dbapi2 as sqlean

__all__ = [
    "MAX_SCORED_ROWS",
    "MIN_POSTINGS",
    "STALE_SHARE",
    "Background",
    "TermStats",
    "Tokens",
    "ranked_rows",
    "varints",
    "vocabulary_table",
]

#: BM25's parameters, FTS5's (``fts5_aux.c``).
K1 = 1.2
B = 0.75

#: A vocabulary snapshot is read again once this share of the table's rows was added or
#: deleted since (the rows added since are counted at each query, so they must stay few).
STALE_SHARE = 0.05

#: A snapshot's table is checked for growth every this many uses (``TermStats.snapshot``).
CHECK_EVERY = 64

#: Terms in fewer rows than this are left out of a snapshot and counted when asked for
#: (a count of a few rows costs microseconds; the snapshot's memory stays with the
#: frequent terms of a Zipfian vocabulary).
SNAPSHOT_MIN_ROWS = 8

#: Matches returning more rows than this are ranked by FTS5 itself. ``highlight()`` on
#: every matched row (FTS5 marks only the ``LIMIT`` it returns) costs ~7 us a row here, so
#: past a few dozen rows FTS5's document counts are the cheaper part (entity searches over
#: a workspace: 300 rows cost 3.1 ms here against FTS5's 0.7 ms).
MAX_SCORED_ROWS = 64

#: Postings (the query terms' document counts, summed) below which FTS5 ranks: its counts
#: cost ~50 ns a posting here ("week", in 23,218 rows, 1.15 ms), this module's scoring a
#: fixed ~0.1 ms plus ~7 us a matched row, so below ~10,000 counting is the cheaper part.
#: The ``load`` mix (a small table, conversations of a few hundred messages) cost 2.59
#: and 3.13 ms of server CPU per request scored here against 2.34 and 2.53 ranked by FTS5
#: (alternating 30 s runs) before this threshold existed.
MIN_POSTINGS = 10_000

#: One ``highlight()`` mark's text.
_MARK = re.compile("\x01([^\x02]*)\x02")


def vocabulary_table(fts_table: str) -> str:
    """The ``fts5vocab`` table over ``fts_table`` (``schema.FTS_VOCAB_DDL``)."""
    return f"{fts_table}_vocabulary"


def _averages(table: str) -> str:
    """The query of FTS5's averages record: the table's row count, then its tokens per
    column, as varints (``_row_count``, ``varints``)."""
    return f"SELECT block FROM {table}_data WHERE id = 1"


def _row_count(record: bytes | None) -> int:
    """The table's row count from its averages record (none yet: an empty table)."""
    return varints(record)[0] if record else 0


def varints(blob: bytes) -> list[int]:
    """The SQLite varints of ``blob`` (FTS5's averages record and docsize rows)."""
    out: list[int] = []
    i, n = 0, len(blob)
    while i < n:
        value = 0
        for j in range(9):
            byte = blob[i]
            i += 1
            if j == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        out.append(value)
    return out


class Tokens:
    """A word's index tokens, from SQLite's own ``porter unicode61 remove_diacritics 2``
    tokenizer: an in-memory FTS5 table holds the word for a moment and its ``fts5vocab``
    instance table lists the tokens. A Python stemmer would be close to FTS5's porter but
    not equal to it, and a mark counted for the wrong term would change a score."""

    #: Words kept before the cache starts again (bounded memory).
    MAX_CACHED = 100_000

    def __init__(self) -> None:
        self._conn: Any = None  # opened on the first word not in the cache
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[str, ...]] = {}

    def _tokenizer(self) -> Any:
        """The in-memory connection (under ``_lock``)."""
        if self._conn is None:
            conn = sqlean.connect(":memory:", check_same_thread=False)
            conn.execute(
                "CREATE VIRTUAL TABLE words USING fts5("
                "w, tokenize='porter unicode61 remove_diacritics 2')"
            )
            conn.execute("CREATE VIRTUAL TABLE tokens USING fts5vocab(words, instance)")
            self._conn = conn
        return self._conn

    def of(self, words: Iterable[str]) -> list[tuple[str, ...]]:
        """Each word's tokens, in order. Safe from any thread: a full cache is replaced,
        not cleared, so a reader holding the old one still finds what it looked up."""
        words = list(words)
        cache = self._cache
        found = [cache.get(w) for w in words]
        if None in found:
            with self._lock:
                conn = self._tokenizer()
                if len(self._cache) >= self.MAX_CACHED:
                    self._cache = {}
                cache = self._cache
                for i, word in enumerate(words):
                    if found[i] is not None:
                        continue
                    hit = cache.get(word)
                    if hit is None:
                        conn.execute("INSERT INTO words(rowid, w) VALUES (1, ?)", (word,))
                        rows = conn.execute("SELECT term FROM tokens ORDER BY offset")
                        hit = cache[word] = tuple(term for (term,) in rows)
                        conn.execute("DELETE FROM words")
                    found[i] = hit
        return [hit for hit in found if hit is not None]


#: One per process: the tokenizer is the same for every store.
TOKENS = Tokens()


@dataclass(slots=True)
class _Snapshot:
    #: The table's row count and largest rowid when the vocabulary was read.
    rows: int
    last: int
    #: Rows holding each term in the body column (terms of ``SNAPSHOT_MIN_ROWS`` or more).
    counts: dict[str, int]


#: Runs ``job(raw DB-API connection)`` on a reader thread of the store, in a read
#: transaction of its own; its future, or ``None`` when it cannot (the store is closing).
Background = Callable[[Callable[[Any], object]], "Future[object] | None"]


class TermStats:
    """One store's vocabulary snapshots, one per FTS table, shared by its reader threads.

    With ``background`` (a file store's reader pool) a snapshot is read there, never in
    the query that found it missing or stale: that query goes on with what it has (none
    yet: FTS5 ranks it; a stale one: its counts plus the rows added since, still exact),
    so no search waits for a vocabulary read (110 ms at 125k rows, seconds at millions).
    Without it (``:memory:``, where the store has one thread) the query reads it itself."""

    def __init__(self, background: Background | None = None) -> None:
        self._background = background
        self._snapshots: dict[str, _Snapshot] = {}
        self._reading: set[str] = set()
        self._lock = threading.Lock()
        self._uses: dict[str, int] = {}
        #: The last background read (tests wait for it).
        self.pending: Future[object] | None = None

    def snapshot(self, raw: Any, table: str, *, again: bool = False) -> _Snapshot | None:
        """The table's snapshot, read (or queued for reading) if there is none, ``again``,
        or it is stale; ``None`` while there is none yet.

        Every ``CHECK_EVERY`` uses the table's row count is read (one point read) and a
        snapshot ``STALE_SHARE`` off is read again: the scoring path finds staleness by
        itself, but a snapshot read when the table was small would otherwise make every
        later query look cheap for FTS5 (``MIN_POSTINGS``) and never be scored here."""
        snap = self._snapshots.get(table)
        if snap is not None and not again:
            uses = self._uses[table] = self._uses.get(table, 0) + 1
            if uses % CHECK_EVERY:
                return snap
            (record,) = raw.execute(f"SELECT ({_averages(table)})").fetchone()
            if abs(_row_count(record) - snap.rows) <= STALE_SHARE * snap.rows:
                return snap
        with self._lock:
            if table in self._reading:
                return snap
            self._reading.add(table)
        if self._background is None:
            return self._read(raw, table)
        future = None
        try:
            future = self._background(lambda conn: self._read(conn, table))
        finally:
            if future is None:  # not queued (or the queueing failed): nobody is reading it
                self._done(table)
            else:
                self.pending = future
        return snap

    def _done(self, table: str) -> None:
        with self._lock:
            self._reading.discard(table)

    def _read(self, raw: Any, table: str) -> _Snapshot:
        """Read the table's vocabulary (the caller marked it ``_reading``)."""
        try:
            record, last = raw.execute(
                f"SELECT ({_averages(table)}), (SELECT coalesce(max(id), 0) FROM {table}_docsize)"
            ).fetchone()
            found = raw.execute(
                f"SELECT term, doc FROM {vocabulary_table(table)} WHERE col = 'body' AND doc >= ?",
                (SNAPSHOT_MIN_ROWS,),
            ).fetchall()
            snap = _Snapshot(_row_count(record), int(last), dict(found))
            self._snapshots[table] = snap
            return snap
        finally:
            self._done(table)


@dataclass(slots=True)
class _Facts:
    """What one query's scores need besides its rows, read in one statement."""

    #: The table's rows and its tokens per column (FTS5's averages record).
    rows: int
    totals: list[int]
    #: Each matched row's size record (tokens per column), by rowid.
    sizes: dict[int, bytes]
    #: Rows holding each query word in the body column.
    counts: list[int]
    #: Rows added and deleted since the snapshot.
    added: int
    deleted: int


def _facts(
    raw: Any,
    table: str,
    rowids: Sequence[int],
    words: Sequence[str],
    phrases: Sequence[tuple[str, ...]],
    snap: _Snapshot,
) -> _Facts | None:
    """The matched rows' sizes, the averages record and each word's document count, in one
    statement (the first column says which row is which); ``None`` without an averages
    record (nothing indexed).

    A word's count is the snapshot's plus the rows added since that hold it (rowids past
    the snapshot's last: a seek into its doclist, not a read of all of it); a word the
    snapshot lacks is counted in full (it was in fewer than ``SNAPSHOT_MIN_ROWS`` rows).
    Deleted rows are not subtracted: their words are unknown."""
    known = [snap.counts.get(p[0]) if len(p) == 1 else None for p in phrases]
    parts = [
        f"SELECT -1, id, sz FROM {table}_docsize WHERE id IN ({', '.join('?' * len(rowids))})",
        f"SELECT -2, 0, ({_averages(table)})",
        f"SELECT -3, 0, (SELECT count(*) FROM {table}_docsize WHERE id > ?)",
    ]
    params: list[object] = [*rowids, snap.last]
    for i, (word, count) in enumerate(zip(words, known, strict=True)):
        phrase = 'body : "' + word.replace('"', '""') + '"'
        if count is None:
            parts.append(f"SELECT {i}, 0, (SELECT count(*) FROM {table} WHERE {table} MATCH ?)")
            params.append(phrase)
        else:  # no seek at all while nothing was added (CASE runs one branch)
            parts.append(
                f"SELECT {i}, 0, CASE WHEN EXISTS (SELECT 1 FROM {table}_docsize WHERE id > ?) "
                f"THEN (SELECT count(*) FROM {table} WHERE {table} MATCH ? AND rowid > ?) "
                "ELSE 0 END"
            )
            params += [snap.last, phrase, snap.last]
    sizes: dict[int, bytes] = {}
    record: bytes | None = None
    added = 0
    counts = [0] * len(words)
    for kind, rowid, value in raw.execute(" UNION ALL ".join(parts), params):
        if kind == -1:
            sizes[rowid] = value
        elif kind == -2:
            record = value
        elif kind == -3:
            added = int(value)
        else:
            counts[kind] = int(value) + (known[kind] or 0)
    if record is None:
        return None
    rows, *totals = varints(record)
    deleted = max(0, snap.rows + added - rows)
    return _Facts(rows, totals, sizes, counts, added, deleted)


def _idf(rows: int, hits: int) -> float:
    """FTS5's IDF: never below a tiny positive value (a term in most rows still counts)."""
    idf = math.log((rows - hits + 0.5) / (hits + 0.5))
    return idf if idf > 0.0 else 1e-6


def ranked_rows(
    raw: Any,
    stats: TermStats,
    table: str,
    match: str,
    words: Sequence[str],
    limit: int,
    extra: str = "",
) -> list[tuple[Any, ...]] | None:
    """``(rowid, bm25, marked, *extra)`` of the rows ``match`` finds, best first (ties by
    rowid), at most ``limit``: ``bm25`` is ``-bm25(table, 1.0, 0.0)``, ``marked`` the body
    with ``highlight()``'s marks (``char(1)``/``char(2)``), ``extra`` more columns to
    select (``", scope"``). ``words``: the query terms the match ORs in the body column, in
    its order. ``None`` when more than ``MAX_SCORED_ROWS`` rows match or no vocabulary
    snapshot is readable yet, or when the terms are in too few rows for their counting to
    cost more than scoring here (``MIN_POSTINGS``, judged by the snapshot's counts): the
    caller ranks with FTS5."""
    phrases = TOKENS.of(words)
    snap = stats.snapshot(raw, table)
    if snap is None:
        return None
    if sum(snap.counts.get(p[0], 0) for p in phrases if len(p) == 1) < MIN_POSTINGS:
        return None
    found = raw.execute(
        f"SELECT rowid, highlight({table}, 0, char(1), char(2)){extra} "
        f"FROM {table} WHERE {table} MATCH ? LIMIT ?",
        (match, MAX_SCORED_ROWS + 1),
    ).fetchall()
    if len(found) > MAX_SCORED_ROWS:
        return None
    if not found:
        return []
    rowids = [row[0] for row in found]
    facts = _facts(raw, table, rowids, words, phrases, snap)
    if facts is not None and max(facts.added, facts.deleted) > STALE_SHARE * snap.rows:
        fresh = stats.snapshot(raw, table, again=True)
        if fresh is not None and fresh is not snap:
            facts = _facts(raw, table, rowids, words, phrases, fresh)
    if facts is None:
        return None
    idf = [_idf(facts.rows, hits) for hits in facts.counts]
    avgdl = sum(facts.totals) / max(1, facts.rows)
    sizes = facts.sizes
    # Each query term's positions among the phrases (two words of one stem are two
    # phrases, and FTS5 counts a token for both).
    positions: dict[tuple[str, ...], list[int]] = {}
    for i, phrase in enumerate(phrases):
        positions.setdefault(phrase, []).append(i)
    scored: list[tuple[float, int, tuple[Any, ...]]] = []
    for row in found:
        rowid = row[0]
        freq = [0] * len(phrases)
        for span in TOKENS.of(_MARK.findall(row[1] or "")):
            for i in positions.get(span, ()):
                freq[i] += 1
        blob = sizes.get(rowid, b"")
        # Sizes under 128 tokens are one byte each: the varints are the bytes.
        size = sum(blob) if max(blob, default=0) < 0x80 else sum(varints(blob))
        norm = K1 * (1.0 - B + B * size / avgdl)
        score = 0.0
        for weight, tf in zip(idf, freq, strict=True):
            if tf:
                score += weight * (tf * (K1 + 1.0)) / (tf + norm)
        scored.append((score, rowid, row))
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [(rowid, score, *row[1:]) for score, rowid, row in scored[:limit]]
