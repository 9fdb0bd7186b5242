"""A Cypher worker keeps the graph it built, and never answers from a stale one.

The graph version (``cypher_generations.py``) moves with every write to a projected table,
from this store or another process on the same file; a query over an unchanged workspace
runs on the worker's cached graph (``CypherPool.cache_hits``) and sends no projection.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from backends.sqlite import SQLiteBackend
from backends.sqlite.cypher_pool import CypherLimits

#: One worker, so every query meets the same cache.
ONE_WORKER = CypherLimits(workers=1, per_workspace=1)


@pytest.fixture
async def backend(tmp_path: Path) -> AsyncIterator[SQLiteBackend]:
    engine = SQLiteBackend(
        tmp_path / "memory.db", embeddings=False, extraction="sync", cypher_limits=ONE_WORKER
    )
    try:
        yield engine
    finally:
        await engine.aclose()


async def _value(backend: SQLiteBackend, cypher: str) -> Any:
    [row] = (await backend.query(cypher)).rows
    return row["v"]


async def test_an_unchanged_workspace_is_projected_once(backend: SQLiteBackend) -> None:
    await backend.add_entity("Ada", "person")
    pool = backend.store.lanes.cypher
    for _ in range(3):
        assert await _value(backend, "MATCH (e:Entity) RETURN count(e) AS v") == 1
    assert (pool.projections_sent, pool.cache_hits) == (1, 2)


async def _conversation(b: SQLiteBackend) -> str:
    found = await b.list_conversations()
    return found[0].id if found else (await b.create_conversation("u")).id


async def _step(b: SQLiteBackend) -> str:
    return (await b.record_step(await _conversation(b), "think", "act")).id


#: A write of each projected table, and a query whose answer it changes (before, after).
WRITES: list[
    tuple[str, Callable[[SQLiteBackend, dict[str, str]], Awaitable[Any]], str, Any, Any]
] = [
    (
        "message",
        lambda b, ids: b.add_message(ids["conversation"], "user", "hi"),
        "MATCH (:Conversation)-[:HAS_MESSAGE]->(m) RETURN count(m) AS v",
        0,
        1,
    ),
    (
        "mention",
        lambda b, ids: b.add_message(ids["conversation"], "user", "Ada Lovelace works at Acme."),
        "MATCH (:Message)-[:MENTIONS]->(e {name: 'Ada Lovelace'}) RETURN count(e) AS v",
        0,
        1,
    ),
    (
        "conversation",
        lambda b, ids: b.create_conversation("someone"),
        "MATCH (c:Conversation) RETURN count(c) AS v",
        1,
        2,
    ),
    (
        "conversation-delete",
        lambda b, ids: b.delete_conversation(ids["conversation"]),
        "MATCH (c:Conversation) RETURN count(c) AS v",
        1,
        0,
    ),
    (
        "step",
        lambda b, ids: b.record_step(ids["conversation"], "think", "act"),
        "MATCH ()-[:HAS_STEP]->(s:ReasoningStep) RETURN count(s) AS v",
        0,
        1,
    ),
    (
        "tool-call",
        lambda b, ids: b.record_tool_call("calc", "{}", "2", "success", None, 1),
        "MATCH (t:ToolCall) RETURN count(t) AS v",
        0,
        1,
    ),
    (
        "entity-description",
        lambda b, ids: b.update_entity(ids["ada"], description="Mathematician"),
        "MATCH (e:Entity {name: 'Ada'}) RETURN e.description AS v",
        None,
        "Mathematician",
    ),
    (
        "entity-feedback",
        lambda b, ids: b.entity_feedback(ids["ada"], 0.25),
        "MATCH (e:Entity {name: 'Ada'}) RETURN e.user_score AS v",
        None,
        0.25,
    ),
    (
        "relationship",
        lambda b, ids: b.add_relationship(ids["ada"], ids["acme"], "WORKS_AT"),
        "MATCH ()-[r:WORKS_AT]->() RETURN count(r) AS v",
        0,
        1,
    ),
    (
        "entity-delete",
        lambda b, ids: b.delete_entity(ids["acme"]),
        "MATCH (e:Entity) RETURN count(e) AS v",
        2,
        1,
    ),
]


@pytest.mark.parametrize(
    ("write", "cypher", "before", "after"),
    [w[1:] for w in WRITES],
    ids=[w[0] for w in WRITES],
)
async def test_every_projected_write_is_seen_by_the_next_query(
    backend: SQLiteBackend,
    write: Callable[[SQLiteBackend, dict[str, str]], Awaitable[Any]],
    cypher: str,
    before: Any,
    after: Any,
) -> None:
    ids = {
        "conversation": (await backend.create_conversation("u")).id,
        "ada": (await backend.add_entity("Ada", "person")).id,
        "acme": (await backend.add_entity("Acme", "organization")).id,
    }
    assert await _value(backend, cypher) == before
    assert await _value(backend, cypher) == before  # now from the cache
    await write(backend, ids)
    assert await _value(backend, cypher) == after


async def test_another_process_writing_the_file_is_seen(
    backend: SQLiteBackend, tmp_path: Path
) -> None:
    count = "MATCH (e:Entity) RETURN count(e) AS v"
    await backend.add_entity("Ada", "person")
    assert await _value(backend, count) == 1
    other = SQLiteBackend(tmp_path / "memory.db", embeddings=False, extraction="off")
    try:
        await other.add_entity("Grace", "person")
    finally:
        await other.aclose()
    assert await _value(backend, count) == 2


async def test_another_workspace_writing_keeps_the_cache(backend: SQLiteBackend) -> None:
    count = "MATCH (e:Entity) RETURN count(e) AS v"
    await backend.add_entity("Ada", "person")
    assert await _value(backend, count) == 1
    pool = backend.store.lanes.cypher
    sent = pool.projections_sent
    await backend.for_workspace("elsewhere").add_entity("Zed", "person")
    assert await _value(backend, count) == 1
    assert pool.projections_sent == sent
