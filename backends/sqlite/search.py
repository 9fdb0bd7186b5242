"""Ranking for the local engine: BM25, vectors, and their weighted fusion.

Scores are in [0, 1], higher is better (the meaning of each mode is documented on
``nams_local.models.SearchResult``). Fusion is a convex combination of the two normalised
scores rather than reciprocal-rank fusion because the weight is then a single, tunable
knob whose effect is visible in the scores (the benchmarks tune it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Connection, text

from nams_local.models import SearchMode

__all__ = ["DEFAULT_HYBRID_WEIGHT", "Ranked", "bm25", "fuse", "rank"]

#: Weight of the vector score in hybrid mode (the rest goes to BM25).
DEFAULT_HYBRID_WEIGHT = 0.5

#: Candidates fetched from each index per requested result, for fusion.
CANDIDATE_FACTOR = 4
MIN_CANDIDATES = 40


@dataclass(frozen=True, slots=True)
class Ranked:
    pk: int
    score: float


def candidates(limit: int) -> int:
    return max(limit * CANDIDATE_FACTOR, MIN_CANDIDATES)


def bm25(conn: Connection, fts_table: str, match: str | None, k: int) -> list[tuple[int, float]]:
    """``(rowid, relevance)`` of the best ``k`` FTS rows, relevance > 0, best first."""
    if match is None:
        return []
    rows = conn.execute(
        text(
            f"SELECT rowid, -rank FROM {fts_table} WHERE {fts_table} MATCH :q "
            "ORDER BY rank LIMIT :k"
        ),
        {"q": match, "k": k},
    ).all()
    return [(int(pk), float(score)) for pk, score in rows]


def _normalise_text(hits: list[tuple[int, float]]) -> dict[int, float]:
    if not hits:
        return {}
    best = max(score for _, score in hits)
    if best <= 0:
        return {pk: 1.0 for pk, _ in hits}
    return {pk: max(0.0, score) / best for pk, score in hits}


def fuse(
    text_hits: list[tuple[int, float]],
    vector_hits: list[tuple[int, float]],
    weight: float,
) -> list[Ranked]:
    """Hybrid ranking: ``weight * vector + (1 - weight) * text``, ties broken by pk."""
    text_scores = _normalise_text(text_hits)
    vector_scores = {pk: min(1.0, max(0.0, sim)) for pk, sim in vector_hits}
    merged = {
        pk: weight * vector_scores.get(pk, 0.0) + (1.0 - weight) * text_scores.get(pk, 0.0)
        for pk in text_scores.keys() | vector_scores.keys()
    }
    return sorted((Ranked(pk, score) for pk, score in merged.items()), key=_order)


def _order(r: Ranked) -> tuple[float, int]:
    return (-r.score, -r.pk)


def rank(
    mode: SearchMode,
    limit: int,
    text_search: Callable[[int], list[tuple[int, float]]],
    vector_search: Callable[[int], list[tuple[int, float]]] | None,
    weight: float,
) -> list[Ranked]:
    """Run the searches ``mode`` needs and return the best ``limit`` results."""
    if mode == "text" or vector_search is None:
        ranked = [Ranked(pk, s) for pk, s in _normalise_text(text_search(limit)).items()]
    elif mode == "vector":
        ranked = [Ranked(pk, min(1.0, max(0.0, sim))) for pk, sim in vector_search(limit)]
    else:
        k = candidates(limit)
        ranked = fuse(text_search(k), vector_search(k), weight)
    ranked.sort(key=_order)
    return ranked[:limit]
