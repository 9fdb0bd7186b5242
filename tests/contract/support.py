"""Small helpers shared by the contract tests (protocol-only, no backend classes)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Sequence
from typing import Any

import pytest

from nams_local.backend import MemoryBackend
from nams_local.errors import NotSupportedError
from nams_local.models import (
    Entity,
    EntityDetails,
    EntityRelationship,
    Message,
    Relationship,
    SearchMode,
    SearchResult,
)

#: Well-formed ids that no store holds.
UNKNOWN_ID = "00000000-0000-4000-8000-000000000000"
UNKNOWN_ID_2 = "ffffffff-ffff-4fff-bfff-ffffffffffff"

SEARCH_TYPES = frozenset({"text", "vector", "hybrid"})


async def tick() -> None:
    """Wait until the clock has moved on by a millisecond (the coarsest timestamp on the
    wire), so 'newest first' orderings are not decided by ties."""
    start = time.monotonic()
    while time.monotonic() - start < 0.001:
        await asyncio.sleep(0)


def text_mode(backend: MemoryBackend) -> SearchMode | None:
    """The mode that runs the text path: explicit ``text`` with embeddings, else default."""
    return "text" if backend.capabilities.vector_search else None


def default_search_type(backend: MemoryBackend) -> str:
    return "hybrid" if backend.capabilities.vector_search else "text"


def supported_modes(backend: MemoryBackend) -> list[tuple[SearchMode | None, str]]:
    """Every (mode argument, expected search_type) the backend must accept."""
    if backend.capabilities.vector_search:
        return [(None, "hybrid"), ("text", "text"), ("vector", "vector"), ("hybrid", "hybrid")]
    return [(None, "text"), ("text", "text")]


def ids(items: Iterable[Any]) -> list[str]:
    return [item.id for item in items]


def assert_ranked(result: SearchResult[Message] | SearchResult[Entity]) -> None:
    """``search_type`` is known; every item has a score in [0, 1]; best first."""
    assert result.search_type in SEARCH_TYPES
    raw = [item.score for item in result.items]
    assert all(score is not None for score in raw), raw
    scores = [score for score in raw if score is not None]
    assert all(0.0 <= score <= 1.0 for score in scores), scores
    assert scores == sorted(scores, reverse=True), scores


async def relate(
    backend: MemoryBackend,
    source: Entity,
    target: Entity,
    type: str,
    properties: dict[str, Any] | None = None,
    confidence: float | None = None,
) -> Relationship | None:
    """``add_relationship`` if the backend has ``relationship_writes``.

    Without the capability the call must raise ``NotSupportedError`` (asserted here) and
    ``None`` is returned, so a test can still check everything that needs no edge.
    """
    if backend.capabilities.relationship_writes:
        return await backend.add_relationship(
            source.id, target.id, type, properties=properties, confidence=confidence
        )
    with pytest.raises(NotSupportedError):
        await backend.add_relationship(
            source.id, target.id, type, properties=properties, confidence=confidence
        )
    return None


def rels(
    details: EntityDetails, type: str | None = None, target_id: str | None = None
) -> list[EntityRelationship]:
    """The entity's relationships, optionally only of ``type`` / other end ``target_id``."""
    return [
        r
        for r in details.relationships
        if (type is None or r.type == type) and (target_id is None or r.target_id == target_id)
    ]


async def graph_node_ids(backend: MemoryBackend) -> set[str]:
    return {node.id for node in (await backend.get_graph()).nodes}


async def graph_edges(backend: MemoryBackend) -> set[tuple[str, str, str]]:
    return {(e.source, e.target, e.type) for e in (await backend.get_graph()).edges}


def dumps(models: Sequence[Any]) -> list[dict[str, Any]]:
    return [m.model_dump() for m in models]


async def graph_snapshot(backend: MemoryBackend) -> dict[str, list[dict[str, Any]]]:
    """The whole graph as plain data, order-free (the contract fixes no order)."""
    graph = await backend.get_graph()
    return {
        "nodes": sorted((n.model_dump() for n in graph.nodes), key=lambda n: n["id"]),
        "edges": sorted((e.model_dump() for e in graph.edges), key=lambda e: e["id"]),
    }
