"""Vector search within one conversation scans that conversation's vectors exactly.

``conversation_vectors.search_conversation`` reads a conversation's whole-text and
passage vectors by key instead of a KNN over the user's partition. It must rank exactly
as the KNN does (same messages, same similarities), including passages of long messages
and messages deleted from the index.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from backends.sqlite import SQLiteBackend
from backends.sqlite.conversation_vectors import exact_scan_available, search_conversation
from backends.sqlite.conversations import conversation_row, unindex_messages
from backends.sqlite.store import Ctx, message_partition
from nams_local import NewMessage
from nams_local.embeddings import HashingEmbedder

LONG = (
    "We spent the weekend in Lisbon. The trams were full. We ate far too many pastries. "
    "Oh, and we adopted a beagle called Biscuit. The flight home was late."
)
QUERIES = ("what is my dog called", "trip to Lisbon", "pastries", "zzqxv nothing")


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteBackend]:
    async with SQLiteBackend(
        tmp_path / "conv.db",
        embedder=HashingEmbedder(),
        vector_index="sqlite-vec",
        extraction="off",
    ) as backend:
        yield backend


async def _conversations(store: SQLiteBackend) -> list[str]:
    """Three conversations of one user (one partition), and one of another user."""
    ids = []
    for user, texts in (
        ("alex", [LONG, "I prefer green tea.", "My dog Biscuit loves the beach."]),
        ("alex", ["Lisbon was sunny.", "Pastries every morning."]),
        ("alex", [f"Unrelated message number {i} about gardening." for i in range(30)]),
        ("sam", ["My dog is called Rex.", "I live in Porto."]),
    ):
        conv = await store.create_conversation(user)
        await store.add_messages(conv.id, [NewMessage(role="user", content=t) for t in texts])
        ids.append(conv.id)
    return ids


def _both(
    ctx: Ctx, conversation_id: str, query: str, k: int
) -> tuple[list[tuple[int, float]], ...]:
    vectors = ctx.vectors
    assert vectors is not None
    conv = conversation_row(ctx, conversation_id)
    part = message_partition(ctx.workspace, conv.user_id)
    vector = vectors.embedder.embed_query(query)
    exact = search_conversation(ctx.conn, vectors.messages, vector, k, part, conv)
    knn = vectors.messages.search(ctx.conn, vector, k, part, conv.id)
    return exact, knn


def _same(exact: list[tuple[int, float]], knn: list[tuple[int, float]]) -> None:
    """The same similarities, best first; the same messages but among ties at the cut."""
    assert [s for _, s in exact] == pytest.approx([s for _, s in knn], abs=1e-5)
    assert [s for _, s in exact] == sorted((s for _, s in exact), reverse=True)
    if exact:
        cut = exact[-1][1] + 1e-5
        assert {pk for pk, s in exact if s > cut} == {pk for pk, s in knn if s > cut}


@pytest.mark.parametrize("k", [1, 3, 40])
async def test_the_exact_scan_ranks_as_the_knn_does(store: SQLiteBackend, k: int) -> None:
    ids = await _conversations(store)
    lane = store.store.vector_lane
    assert lane is not None
    await lane.drained()

    def check(ctx: Ctx) -> int:
        assert exact_scan_available(ctx.conn, "messages_vec")  # not the KNN fallback
        checked = 0
        for conversation_id in ids:
            for query in QUERIES:
                exact, knn = _both(ctx, conversation_id, query, k)
                _same(exact, knn)
                checked += len(exact)
        return checked

    assert await store.store.read(check, Ctx(store.store, store.workspace)) > 0


async def test_a_passage_finds_its_message_and_deleted_rows_stay_gone(
    store: SQLiteBackend,
) -> None:
    first, *_ = await _conversations(store)
    lane = store.store.vector_lane
    assert lane is not None
    await lane.drained()
    ctx = Ctx(store.store, store.workspace)

    def best(ctx: Ctx) -> tuple[int, list[tuple[int, float]]]:
        exact, knn = _both(ctx, first, "adopted a beagle called Biscuit", 1)
        _same(exact, knn)
        return exact[0][0], exact

    pk, _ = await store.store.read(best, ctx)
    content = await store.store.read(
        lambda c: c.conn.exec_driver_sql(
            "SELECT content FROM messages WHERE pk = ?", (pk,)
        ).scalar_one(),
        ctx,
    )
    assert content == LONG  # found through the passage, scored as the message

    await store.store.run(lambda c: unindex_messages(c, [pk]), ctx)

    def after(ctx: Ctx) -> list[int]:
        exact, knn = _both(ctx, first, "adopted a beagle called Biscuit", 40)
        _same(exact, knn)
        return [p for p, _ in exact]

    remaining = await store.store.read(after, ctx)
    assert pk not in remaining and len(remaining) == 2


async def test_a_numpy_index_keeps_its_own_scoped_search(tmp_path: Path) -> None:
    async with SQLiteBackend(
        tmp_path / "np.db", embedder=HashingEmbedder(), vector_index="numpy", extraction="off"
    ) as backend:
        conv = await backend.create_conversation("alex")
        await backend.add_messages(conv.id, [NewMessage(role="user", content=LONG)])
        found = await backend.search_messages(conv.id, "beagle Biscuit", mode="vector")
        assert [m.content for m in found.items] == [LONG]
        assert found.items[0].score is not None and np.isfinite(found.items[0].score)
