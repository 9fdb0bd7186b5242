"""The figures of a run: one sample per turn, summarised per series and per memory source.

Kept apart from the timing loop so what a figure means (a percentile of what, a mean over
which turns) is read in one place, and the report only formats what is computed here.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from nams_local.retrieval import DEFAULT_CROSS_SESSION_LIMIT, DEFAULT_GRAPH_EXPANSION_LIMIT

from .._common import percentile
from .instruments import Call
from .kinds import SERIES_LABELS, SOURCES

__all__ = ["SOLO_STEPS", "Series", "TurnSample", "solo_summary"]


@dataclass
class TurnSample:
    """One measured turn: its times, its backend calls and what made the final list."""

    ms: float  # the whole turn: retrieval, then both writes
    retrieve_ms: float
    persist_ms: float
    #: Waiting, untimed, for the turn's background work (extraction, message vectors).
    settle_ms: float
    http_requests: int | None
    calls: list[Call]
    hits: Counter[str]
    embed_calls: int
    embed_ms: float
    model_runs: int
    warnings: int


@dataclass
class Series:
    """The turns of one kind; ``summary`` gives the figures, whole-turn and per source."""

    kind: str
    samples: list[TurnSample] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        samples = self.samples
        n = len(samples)
        ms = [s.ms for s in samples]

        def mean(values: Sequence[float]) -> float:
            return sum(values) / n if n else 0.0

        methods: Counter[str] = Counter()
        for s in samples:
            methods.update(c.method for c in s.calls)
        by_source: dict[str, Any] = {}
        for source in SOURCES:
            done_at = [
                max(c.end_ms for c in s.calls if c.source == source)
                for s in samples
                if any(c.source == source for c in s.calls)
            ]
            by_source[source] = {
                "calls_per_turn": mean([sum(c.source == source for c in s.calls) for s in samples]),
                "call_ms_per_turn": mean(
                    [
                        sum(c.end_ms - c.start_ms for c in s.calls if c.source == source)
                        for s in samples
                    ]
                ),
                "done_at_p50_ms": percentile(done_at, 50),
                "done_at_p95_ms": percentile(done_at, 95),
                "items_per_turn": mean(
                    [sum(c.items for c in s.calls if c.source == source) for s in samples]
                ),
                "hits_per_turn": mean([s.hits[source] for s in samples]),
                "turns_with_hits": sum(1 for s in samples if s.hits[source]) / n if n else 0.0,
            }
        retrieve = [s.retrieve_ms for s in samples]
        persist = [s.persist_ms for s in samples]
        http = [s.http_requests for s in samples if s.http_requests is not None]
        return {
            "label": SERIES_LABELS[self.kind],
            "n": n,
            "p50_ms": percentile(ms, 50),
            "p95_ms": percentile(ms, 95),
            "p99_ms": percentile(ms, 99),
            "retrieve_p50_ms": percentile(retrieve, 50),
            "retrieve_p95_ms": percentile(retrieve, 95),
            "retrieve_p99_ms": percentile(retrieve, 99),
            "persist_p50_ms": percentile(persist, 50),
            "persist_p95_ms": percentile(persist, 95),
            "settle_p50_ms": percentile([s.settle_ms for s in samples], 50),
            "settle_p95_ms": percentile([s.settle_ms for s in samples], 95),
            "http_requests_per_turn": sum(http) / len(http) if http else None,
            "mean_ms": mean(ms),
            "max_ms": max(ms, default=0.0),
            "stdev_ms": statistics.stdev(ms) if n > 1 else 0.0,
            "calls_per_turn": mean([len(s.calls) for s in samples]),
            "calls_per_turn_by_method": {k: v / n for k, v in methods.items()} if n else {},
            "failed_calls": sum(c.failed for s in samples for c in s.calls),
            "by_source": by_source,
            "hits_per_turn": mean([sum(s.hits.values()) for s in samples]),
            "empty_turns": sum(1 for s in samples if not s.hits),
            "embed_query_calls_per_turn": mean([s.embed_calls for s in samples]),
            "embed_query_ms_per_turn": mean([s.embed_ms for s in samples]),
            "model_runs_per_turn": mean([s.model_runs for s in samples]),
            "warnings": sum(s.warnings for s in samples),
        }


SOLO_STEPS = (
    "embed_query",
    "long-term",
    "graph",
    "conversation",
    "cross-session",
    "cross-session per-conversation",
    "reasoning",
)
SOLO_LABELS = {
    "embed_query": "embed_query of the fresh query (model)",
    "long-term": "long-term: search_entities",
    "graph": f"graph: {DEFAULT_GRAPH_EXPANSION_LIMIT} x get_entity",
    "conversation": "conversation: search_messages",
    "cross-session": "cross-session: search_user_messages",
    "cross-session per-conversation": (
        f"cross-session: 1 + 2 x {DEFAULT_CROSS_SESSION_LIMIT} calls (hidden)"
    ),
    "reasoning": "reasoning: list_steps",
}


def solo_summary(rows: list[dict[str, float]]) -> dict[str, Any]:
    """Percentiles of each source run alone (``Measurer.solo`` rows), in ``SOLO_STEPS`` order."""
    out: dict[str, Any] = {}
    for step in SOLO_STEPS:
        ms = [r[step] for r in rows]
        out[step] = {
            "label": SOLO_LABELS[step],
            "n": len(ms),
            "p50_ms": percentile(ms, 50),
            "p95_ms": percentile(ms, 95),
            "mean_ms": sum(ms) / len(ms) if ms else 0.0,
        }
    return out
