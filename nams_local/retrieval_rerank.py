"""Retrieval with a reranker: the search hits of one question rescored in one call.

Kept apart from ``retrieval`` so the hook is one call site there: the current
conversation's messages, the entities and the cross-session messages are sent to the
reranker together (one batch per question), each gets the reranker's relevance as its
score, and each source is reordered by it (stable, so ties keep the search order). Hits
without a score (reasoning steps) are neither sent nor changed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from .models import Entity, Message
from .rerank import Reranker, rerank_scores

__all__ = ["rerank_hits"]


class _Scored(Protocol):
    @property
    def content(self) -> str: ...

    @property
    def relevance(self) -> float | None: ...


H = TypeVar("H", bound=_Scored)


async def rerank_hits(
    reranker: Reranker,
    query: str,
    messages: Sequence[Message],
    entities: Sequence[Entity],
    cross: Sequence[H],
    entity_text: Callable[[Entity], str],
    with_relevance: Callable[[H, float], H],
) -> tuple[list[Message], list[Entity], list[H]]:
    """The three sources rescored by ``reranker`` and reordered by its scores."""
    scored_cross = [i for i, h in enumerate(cross) if h.relevance is not None]
    texts = [
        *(m.content for m in messages),
        *(entity_text(e) for e in entities),
        *(cross[i].content for i in scored_cross),
    ]
    scores = await rerank_scores(reranker, query, texts)
    m_scores = scores[: len(messages)]
    e_scores = scores[len(messages) : len(messages) + len(entities)]
    c_scores = dict(zip(scored_cross, scores[len(messages) + len(entities) :], strict=True))
    new_messages = [
        m.model_copy(update={"score": s}) for m, s in zip(messages, m_scores, strict=True)
    ]
    new_entities = [
        e.model_copy(update={"score": s}) for e, s in zip(entities, e_scores, strict=True)
    ]
    new_cross = [
        with_relevance(h, c_scores[i]) if i in c_scores else h for i, h in enumerate(cross)
    ]

    def best_first(score: float | None) -> float:
        return -(score if score is not None else 0.0)

    new_messages.sort(key=lambda m: best_first(m.score))
    new_entities.sort(key=lambda e: best_first(e.score))
    # Unscored cross-session hits (reasoning) keep their place after the scored ones.
    ranked_cross = sorted(
        (h for h in new_cross if h.relevance is not None), key=lambda h: best_first(h.relevance)
    )
    return (
        new_messages,
        new_entities,
        [*ranked_cross, *(h for h in new_cross if h.relevance is None)],
    )
