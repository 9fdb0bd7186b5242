"""Word-overlap relevance: the deterministic score of the legacy (TCK) searches.

The legacy searches take a ``threshold`` on a 0–1 scale, and the TCK requires that an item
sharing words with the query outranks one that does not, and that an unrelated query finds
nothing at a high threshold. BM25 scores have no fixed scale and a hash "embedding" carries
no meaning, so these searches score by the share of the query's words found in the item:
``1.0`` = every query word occurs, ``0.0`` = none (such items are never returned). Words are
case-folded and lightly de-suffixed ("tests" ~ "test", "deploying" ~ "deploy"); stopwords
count only when the query has nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TypeVar

from ..text import terms

__all__ = ["Scored", "item_words", "query_words", "rank_by_overlap", "score"]

K = TypeVar("K")

_WORD = re.compile(r"\w+", re.UNICODE)
_SUFFIXES = ("ing", "ed", "es", "s")

#: ``(key, score)`` pairs, best first.
Scored = list[tuple[K, float]]


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            return word[: -len(suffix)]
    return word


def query_words(query: str) -> frozenset[str]:
    """The query's distinct words (stopwords dropped unless nothing else is left)."""
    return frozenset(_stem(w) for w in terms(query))


def item_words(text: str) -> frozenset[str]:
    return frozenset(_stem(w.casefold()) for w in _WORD.findall(text))


def score(query: frozenset[str], text: str) -> float:
    """Share of the query's words that occur in ``text`` (0 when the query has none)."""
    if not query:
        return 0.0
    return len(query & item_words(text)) / len(query)


def rank_by_overlap(
    query: str,
    items: Iterable[tuple[K, str]],
    *,
    limit: int,
    threshold: float = 0.0,
    exact: Sequence[K] = (),
) -> Scored[K]:
    """The best ``limit`` items with score ≥ ``threshold`` and > 0, best first.

    ``exact`` keys (an exact name match) score 1.0 and come before every other item; ties
    keep the input order, so callers pass items oldest first for a stable ranking.
    """
    words = query_words(query)
    first = set(exact)
    scored: list[tuple[int, float, int, K]] = []
    for index, (key, text) in enumerate(items):
        value = 1.0 if key in first else score(words, text)
        if value > 0.0 and value >= threshold:
            scored.append((0 if key in first else 1, -value, index, key))
    scored.sort(key=lambda row: row[:3])
    return [(key, -neg) for _, neg, _, key in scored[:limit]]
