"""The statements every turn runs read what they need, not their workspace.

A turn's statements are few but run on every chat turn, so a plan that reads a whole index
costs milliseconds that grow with the store: the entity rows of a search's hits were read
through the workspace's partial index (every entity of it) rather than by rowid, and the
full-text queries ordered by FTS5's ``rank`` column, which re-seeks every returned row.
These tests read the plans SQLite chooses and compare the rankings on a real store.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from backends.sqlite import SQLiteBackend, dbapi, prepared, turns
from backends.sqlite.search import bm25, bm25_rank
from backends.sqlite.store import Ctx
from backends.sqlite.text import match_query, scope_token
from nams_local import NewMessage
from nams_local.embeddings import HashingEmbedder, Vector
from nams_local.turns import TurnRequest

WORDS = ("lima", "python", "chess", "coffee", "berlin", "snowflake", "launch", "rust")


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteBackend]:
    async with SQLiteBackend(
        tmp_path / "plans.db", embedder=HashingEmbedder(), extraction="off"
    ) as backend:
        yield backend


async def _fill(backend: SQLiteBackend) -> None:
    for n in range(60):
        a, b = WORDS[n % len(WORDS)], WORDS[(n * 3 + 1) % len(WORDS)]
        await backend.add_entity(f"Thing {n}", "topic", f"about {a} and {b} {a}")
    conv = await backend.create_conversation("alex")
    await backend.add_messages(
        conv.id,
        [
            NewMessage(role="user", content=f"{WORDS[n % 8]} {WORDS[(n * 5) % 8]} note {n}")
            for n in range(40)
        ],
    )


def _plan(ctx: Ctx, sql: str, params: tuple[object, ...]) -> str:
    rows = dbapi.fetch_all(ctx.conn, f"EXPLAIN QUERY PLAN {sql}", params)
    return " | ".join(str(row[3]) for row in rows)


async def test_a_search_reads_its_entity_rows_by_rowid(store: SQLiteBackend) -> None:
    await _fill(store)

    def plans(ctx: Ctx) -> list[str]:
        # From 4 keys on, SQLite's planner preferred the workspace's partial index.
        return [
            _plan(
                ctx,
                prepared.ENTITIES_BY_PKS.format(marks=", ".join("?" * n)),
                (*range(1, n + 1), ctx.workspace),
            )
            for n in (1, 4, 5, 20)
        ]

    for found in await store.store.read(plans, Ctx(store.store, store.workspace)):
        assert "INTEGER PRIMARY KEY" in found, found
        assert "ux_entities_ws_resolve_key" not in found, found


async def test_the_spelled_out_bm25_ranks_as_the_tables_rank(store: SQLiteBackend) -> None:
    """``bm25_rank`` must stay what ``schema.FTS_RANK`` configures: same rows, same
    order (ties included), same scores as ``ORDER BY rank``."""
    await _fill(store)

    def both(ctx: Ctx) -> list[tuple[list[tuple[int, float]], list[tuple[int, float]]]]:
        out = []
        for table, query in [
            ("entities_fts", "lima coffee rust"),
            ("entities_fts", "python"),
            ("messages_fts", "chess berlin note"),
            ("messages_fts", "snowflake launch"),
        ]:
            match = match_query(query, scope_token("w", ctx.workspace))
            if table == "messages_fts":
                match = match_query(query)
            rows = dbapi.fetch_all(
                ctx.conn,
                f"SELECT rowid, -rank FROM {table} WHERE {table} MATCH ? ORDER BY rank LIMIT 30",
                (match,),
            )
            configured = [(int(r[0]), round(float(r[1]), 9)) for r in rows]
            spelled = dbapi.fetch_all(
                ctx.conn,
                f"SELECT rowid, -{bm25_rank(table)} AS s FROM {table} WHERE {table} MATCH ? "
                "ORDER BY s DESC LIMIT 30",
                (match,),
            )
            out.append((configured, [(int(r[0]), round(float(r[1]), 9)) for r in spelled]))
        return out

    pairs = await store.store.read(both, Ctx(store.store, store.workspace))
    for configured, spelled in pairs:
        assert configured, "the fixture must match something"
        assert spelled == configured


async def test_bm25_scores_are_in_unit_range_best_first(store: SQLiteBackend) -> None:
    await _fill(store)

    def hits(ctx: Ctx) -> list[tuple[int, float]]:
        match = match_query("lima coffee", scope_token("w", ctx.workspace))
        return bm25(ctx.conn, "entities_fts", match, 10, 2)

    found = await store.store.read(hits, Ctx(store.store, store.workspace))
    assert len(found) == 10
    assert all(0.0 <= score <= 1.0 for _, score in found)


async def _conversations(backend: SQLiteBackend, n: int) -> list[str]:
    ids = []
    for c in range(n):
        conv = await backend.create_conversation("alex")
        await backend.add_messages(
            conv.id,
            [
                NewMessage(role="user", content=f"{WORDS[(c + m) % 8]} plans {c} {m}")
                for m in range(5)
            ],
        )
        ids.append(conv.id)
    lane = backend.store.vector_lane
    assert lane is not None
    await lane.drained()
    return ids


def _statements(ctx: Ctx, request: TurnRequest, vector: Vector) -> list[str]:
    """The SQL a turn's two reader jobs run for ``request``, traced on this job's
    connection."""
    seen: list[str] = []
    raw = dbapi.raw_connection(ctx.conn)
    raw.set_trace_callback(seen.append)
    try:
        ready = turns.ready_vector(vector)
        turns.turn_message_reads(ctx, request, ready, "hybrid", 0.8)
        turns.turn_entity_reads(ctx, request, ready, turns.ready_vector(None), "hybrid", 0.8)
    finally:
        raw.set_trace_callback(None)
    # Top-level statements only ("-- ..." are the ones FTS5 and sqlite-vec run inside).
    return [s for s in seen if not s.startswith("--") and s.split()[0] not in ("BEGIN", "COMMIT")]


async def test_a_turns_statements_do_not_grow_with_the_conversations_searched(
    store: SQLiteBackend,
) -> None:
    """Each other conversation searched cost two or three statements of its own (where its
    vectors are, their chunks); now all of them share one of each."""
    convs = await _conversations(store, 7)
    vector = HashingEmbedder().embed_query("lima plans")

    def request(others: int) -> TurnRequest:
        return TurnRequest(
            conversation_id=convs[0],
            user_id="alex",
            query="lima plans",
            message_limit=6,
            entity_limit=5,
            conversation_limit=others,
            per_conversation_limit=3,
        )

    def both(ctx: Ctx) -> tuple[list[str], list[str]]:
        _statements(ctx, request(6), vector)  # once-per-process reads (layout, snapshot)
        return _statements(ctx, request(1), vector), _statements(ctx, request(6), vector)

    one, six = await store.store.read(both, Ctx(store.store, store.workspace))
    assert len(six) == len(one), (one, six)
    assert len(six) <= 12, six
