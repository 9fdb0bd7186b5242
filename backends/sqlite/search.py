"""Ranking for the local engine: BM25, vectors, and their weighted fusion.

Scores are in [0, 1], higher is better (the meaning of each mode is documented on
``nams_local.models.SearchResult``). Fusion is a convex combination of the two scores
rather than reciprocal-rank fusion because the weight is then a single, tunable knob
whose effect is visible in the scores (the benchmarks tune it).

Vector and hybrid scores compare *across* searches, so a caller can set one relevance
floor: the vector part is the cosine similarity itself, and the text part is absolute
(``text_score``: query coverage plus BM25 per query term through a fixed saturation) —
not "divided by the best hit of this search", which made the best hit of a query that
matches nothing score 1.0. Text-only searches keep the hosted contract's rule (the best
hit scores 1.0), so they carry no floor.

A conversation search may pass a ``prior``: factors on some candidates' scores, applied
before the best are taken (``role_prior``: a question about the user demotes the
assistant's messages).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from nams_local.models import SearchMode

from . import dbapi
from .fts_bm25 import TermStats, ranked_rows

__all__ = [
    "DEFAULT_HYBRID_WEIGHT",
    "TEXT_HALF",
    "Prior",
    "Ranked",
    "bm25",
    "bm25_rank",
    "bm25_rows",
    "candidates",
    "combine",
    "fuse",
    "matched",
    "rank",
    "text_score",
    "vector_candidates",
]

#: Weight of the vector score in hybrid mode (the rest goes to the text score). Chosen on
#: the ``quality`` benchmark's two generated sets (docs/retrieval.md): from 0.5 to 0.8,
#: recall@10 is flat on both, and 0.8 separates answerable from unanswerable questions
#: best (the text part adds as much to a topical non-answer as to an answer).
DEFAULT_HYBRID_WEIGHT = 0.8

#: BM25 relevance per query term at which the text score is 0.5. FTS5's BM25 of one
#: matched term is its IDF (about 2-9 from a few hundred to a million rows) times a
#: length factor near 1, so 4 puts a rare matched word well above 0.5 and a common one
#: (or one word of a long question) below it.
TEXT_HALF = 4.0
#: Share of the text score that is query coverage (the rest is BM25 distinctiveness).
COVERAGE_SHARE = 0.5

#: Candidates fetched from each index per requested result, for fusion.
CANDIDATE_FACTOR = 4
MIN_CANDIDATES = 40


#: Factors on some candidates' scores, applied before the best are taken: ``pks ->
#: {pk: factor}``, the pks left out keeping their score (``role_prior``).
Prior = Callable[[Sequence[int]], dict[int, float]]


@dataclass(frozen=True, slots=True)
class Ranked:
    pk: int
    score: float


def candidates(limit: int) -> int:
    return max(limit * CANDIDATE_FACTOR, MIN_CANDIDATES)


def bm25_rank(fts_table: str) -> str:
    """The ranking expression of a body-and-scope FTS table: BM25 of the body, the scope
    column weighed 0 (what ``schema.FTS_RANK`` sets as the tables' ``rank``).

    Spelled out rather than ``ORDER BY rank``: with ``rank`` FTS5 runs the query into its
    own sorter and then seeks every returned row again for ``highlight()``; ordering by
    the ``bm25()`` call is the same ranking (same scores, same order of ties: measured
    equal on 400 queries of the 100k ``turn`` store) at about 60 % of the CPU (entities,
    10k rows: 4.7 -> 3.0 ms per search; a turn's shared message query 1.5 -> 0.9 ms).
    """
    return f"bm25({fts_table}, 1.0, 0.0)"


def bm25_rows(
    conn: Connection,
    fts_table: str,
    match: str,
    limit: int,
    *,
    rank: str | None = None,
    stats: TermStats | None = None,
    words: Sequence[str] | None = None,
    extra: str = "",
) -> Sequence[Sequence[Any]]:
    """``(rowid, bm25, marked, *extra)`` of the best ``limit`` rows ``match`` finds, best
    first: ``bm25`` positive, ``marked`` the body with ``highlight()``'s marks, ``extra``
    more columns (``", scope"``). ``rank`` is the ranking expression, for a table ranked
    otherwise (default: ``bm25_rank``). With ``stats`` and the match's body ``words`` (a
    table with a vocabulary, ``schema.FTS_VOCAB_DDL``), a match of few rows is scored by
    ``fts_bm25.ranked_rows`` (the same BM25, no per-query document counts); FTS5 ranks
    the rest."""
    if stats is not None and words and rank is None:
        rows = ranked_rows(dbapi.raw_connection(conn), stats, fts_table, match, words, limit, extra)
        if rows is not None:
            return rows
    order = bm25_rank(fts_table) if rank is None else rank
    return dbapi.fetch_all(
        conn,
        f"SELECT rowid, -{order} AS score, highlight({fts_table}, 0, char(1), char(2)) AS marked"
        f"{extra} FROM {fts_table} WHERE {fts_table} MATCH ? ORDER BY score DESC LIMIT ?",
        (match, limit),
    )


def bm25(
    conn: Connection,
    fts_table: str,
    match: str | None,
    k: int,
    terms: int = 1,
    rank: str | None = None,
    *,
    stats: TermStats | None = None,
    words: Sequence[str] | None = None,
) -> list[tuple[int, float]]:
    """``(rowid, score)`` of the best ``k`` FTS rows by BM25, best first, the score in
    [0, 1] and comparable across searches (``text_score``); ``terms`` is the number of
    query terms the match expression ORs together. ``rank``, ``stats`` and ``words``: as
    for ``bm25_rows``."""
    if match is None:
        return []
    rows = bm25_rows(conn, fts_table, match, k, rank=rank, stats=stats, words=words)
    n = max(1, terms)
    return [
        (int(pk), text_score(float(score) / n, matched(marked) / n)) for pk, score, marked in rows
    ]


def matched(marked: str | None) -> int:
    """How many distinct words ``highlight()`` marked (the query terms the row contains)."""
    if not marked:
        return 0
    words: set[str] = set()
    for chunk in marked.split("\x01")[1:]:
        words.update(w.casefold() for w in chunk.split("\x02", 1)[0].split())
    return len(words)


def text_score(relevance: float, coverage: float) -> float:
    """A text hit's score in [0, 1]: half how much of the query it covers (the share of
    query terms it contains), half how distinctive the match is (BM25 per query term,
    ``t / (t + TEXT_HALF)``). Coverage keeps a full match meaningful in a small store,
    where BM25's IDF is near 0 for any word most rows share."""
    t = max(0.0, relevance)
    return COVERAGE_SHARE * min(1.0, max(0.0, coverage)) + (1.0 - COVERAGE_SHARE) * t / (
        t + TEXT_HALF
    )


def _clip(scores: list[tuple[int, float]]) -> dict[int, float]:
    return {pk: min(1.0, max(0.0, score)) for pk, score in scores}


def fuse(
    text_hits: list[tuple[int, float]],
    vector_hits: list[tuple[int, float]],
    weight: float,
) -> list[Ranked]:
    """Hybrid ranking by ``combine``, ties broken by pk."""
    text_scores = _clip(text_hits)
    vector_scores = _clip(vector_hits)
    merged = {
        pk: combine(vector_scores.get(pk, 0.0), text_scores.get(pk, 0.0), weight)
        for pk in text_scores.keys() | vector_scores.keys()
    }
    return sorted((Ranked(pk, score) for pk, score in merged.items()), key=_order)


def combine(vector: float, text_: float, weight: float) -> float:
    """The hybrid score of one hit: a weighted noisy-or, ``1 - (1 - v)^(2w) (1 - t)^(2(1-w))``.

    Either signal alone can make a hit relevant (a paraphrase has no shared word; a name
    may embed poorly), and both together count more. It is a convex combination too, of
    the evidence ``-log(1 - score)`` of each part, so ``weight`` still reads as the vector
    share; at ``w = 0.5`` it is ``v + t - v t``. The linear blend it replaces halved the
    score of every paraphrase (no text part), so no one floor could tell "relevant, no
    shared word" from "nothing relevant".
    """
    v = min(max(vector, 0.0), _ALMOST_ONE)
    t = min(max(text_, 0.0), _ALMOST_ONE)
    doubt = math.pow(1.0 - v, 2.0 * weight) * math.pow(1.0 - t, 2.0 * (1.0 - weight))
    return 1.0 - doubt


_ALMOST_ONE = 1.0 - 1e-9


def _order(r: Ranked) -> tuple[float, int]:
    return (-r.score, -r.pk)


def vector_candidates(mode: SearchMode, limit: int) -> int:
    """How many vector hits ``rank`` asks for: ``limit`` alone, ``candidates(limit)`` to
    fuse (so a search begun before ``rank`` runs, ``turns.early_entity_knn``, asks the same)."""
    return limit if mode == "vector" else candidates(limit)


def rank(
    mode: SearchMode,
    limit: int,
    text_search: Callable[[int], list[tuple[int, float]]],
    vector_search: Callable[[int], list[tuple[int, float]]] | None,
    weight: float,
    prior: Prior | None = None,
) -> list[Ranked]:
    """Run the searches ``mode`` needs and return the best ``limit`` results; ``prior``
    gives factors for some of the candidates' scores (``role_prior``), applied before
    the best are taken."""
    if mode == "text" or vector_search is None:
        # Fetched by BM25, ordered by the text score (which also weighs coverage), and, as
        # the hosted contract has it for text search, divided by the best one (1.0).
        scores = _apply(_clip(text_search(candidates(limit))), prior)
        best = max(scores.values(), default=0.0)
        ranked = [Ranked(pk, score / best if best > 0 else 1.0) for pk, score in scores.items()]
    elif mode == "vector":
        # With a prior, more than ``limit`` candidates, so a demoted hit can be passed.
        k = limit if prior is None else candidates(limit)
        hits = _apply(_clip(vector_search(k)), prior)
        ranked = [Ranked(pk, score) for pk, score in hits.items()]
    else:
        k = vector_candidates(mode, limit)
        fused = {r.pk: r.score for r in fuse(text_search(k), vector_search(k), weight)}
        ranked = [Ranked(pk, score) for pk, score in _apply(fused, prior).items()]
    ranked.sort(key=_order)
    return ranked[:limit]


def _apply(scores: dict[int, float], prior: Prior | None) -> dict[int, float]:
    """``scores`` with ``prior``'s factors applied (every mode's one place for them)."""
    if prior is None or not scores:
        return scores
    factors = prior(list(scores))
    return {pk: score * factors.get(pk, 1.0) for pk, score in scores.items()}
