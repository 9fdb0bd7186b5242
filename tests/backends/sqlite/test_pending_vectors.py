"""A conversation search finds its just-acked messages by vector without waiting for the
vector lane, and their texts are embedded once (``pending_vectors``).

The lane's model thread is held on a bulk backlog; a message acked in another
conversation must still be found by vector search at once, its text must go through the
model in the same run as the query, and the lane must store that vector instead of
embedding the text again. Once with the hashing embedder, once with the real model.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from backends.sqlite import SQLiteBackend
from backends.sqlite.pending_vectors import MAX_PENDING_ROWS
from nams_local import NewMessage
from nams_local.embeddings import BaseEmbedder, HashingEmbedder, default_embedder

from .held_lane import HeldBulk, hold_the_lane


async def _found_while_the_lane_is_held(tmp_path: Path, inner: BaseEmbedder) -> None:
    embedder = HeldBulk(inner)
    async with SQLiteBackend(tmp_path / "m.sqlite3", embedder=embedder, extraction="off") as b:
        try:
            mine = await b.create_conversation("u2")
            await hold_the_lane(b, embedder)
            noise = await b.add_message(mine.id, "user", "the quarterly tax return is due")
            own = await b.add_message(mine.id, "user", "we adopted a beagle called Biscuit")
            query = "a beagle called Biscuit"
            # The lane's model thread is still held: only the overlay can find these.
            found = await asyncio.wait_for(
                b.search_messages(mine.id, query, mode="vector", limit=2), 30
            )
            assert not embedder.gate.is_set()
            assert [m.id for m in found.items][:1] == [own.id]
            # One model run held the query and both pending texts.
            [run] = embedder.runs_with(query)
            assert own.content in run and noise.content in run
            embedder.gate.set()
            await asyncio.wait_for(b.store.vector_lane.drained(), 60)  # type: ignore[union-attr]
            # The lane stored the search's vectors: each text went through the model once.
            assert len(embedder.runs_with(own.content)) == 1
            assert len(embedder.runs_with(noise.content)) == 1
            again = await b.search_messages(mine.id, "a beagle named Biscuit", mode="vector")
            assert again.items[0].id == own.id
            assert again.items[0].score == pytest.approx(found.items[0].score, abs=0.05)
        finally:
            embedder.gate.set()


async def test_a_just_acked_message_is_found_by_vector_while_the_lane_is_held(
    tmp_path: Path,
) -> None:
    await _found_while_the_lane_is_held(tmp_path, HashingEmbedder(dimension=64))


@pytest.mark.slow
async def test_a_just_acked_message_is_found_by_vector_with_the_real_model(
    tmp_path: Path,
) -> None:
    await _found_while_the_lane_is_held(tmp_path, default_embedder())


async def test_a_bulk_in_the_searched_conversation_waits_for_the_lane(tmp_path: Path) -> None:
    """More pending rows than the overlay takes: the search waits for the lane (which
    takes them first), and every one of them is found."""
    embedder = HeldBulk(HashingEmbedder(dimension=64))
    async with SQLiteBackend(tmp_path / "m.sqlite3", embedder=embedder, extraction="off") as b:
        try:
            mine = await b.create_conversation("u2")
            await hold_the_lane(b, embedder)
            texts = [f"note {i} about sailing lessons" for i in range(MAX_PENDING_ROWS + 1)]
            stored = await b.add_messages(
                mine.id, [NewMessage(role="user", content=t) for t in texts]
            )
            search = asyncio.create_task(
                b.search_messages(
                    mine.id, f"note {MAX_PENDING_ROWS} sailing", mode="vector", limit=1
                )
            )
            try:
                await asyncio.sleep(0.2)
                assert not search.done()  # waiting for the held lane
                assert not any(embedder.runs_with(t) for t in texts)  # the lane embeds them
            finally:
                embedder.gate.set()
                found = await asyncio.wait_for(search, 30)
            assert [m.id for m in found.items] == [stored[-1].id]
        finally:
            embedder.gate.set()


async def test_concurrent_searches_share_the_embedding_of_their_pending_rows(
    tmp_path: Path,
) -> None:
    embedder = HeldBulk(HashingEmbedder(dimension=64))
    async with SQLiteBackend(tmp_path / "m.sqlite3", embedder=embedder, extraction="off") as b:
        try:
            mine = await b.create_conversation("u2")
            await hold_the_lane(b, embedder)
            texts = [f"pending note {i} on the allotment rota" for i in range(4)]
            stored = await b.add_messages(
                mine.id, [NewMessage(role="user", content=t) for t in texts]
            )
            queries = [f"allotment rota note {i}" for i in range(6)]
            found = await asyncio.wait_for(
                asyncio.gather(
                    *(b.search_messages(mine.id, q, mode="vector", limit=4) for q in queries)
                ),
                30,
            )
            for result in found:
                assert {m.id for m in result.items} == {m.id for m in stored}
            for text in texts:  # six searches, one embedding each
                assert len(embedder.runs_with(text)) == 1, text
            embedder.gate.set()
            await asyncio.wait_for(b.store.vector_lane.drained(), 60)  # type: ignore[union-attr]
            for text in texts:  # and the lane stored the search's vectors
                assert len(embedder.runs_with(text)) == 1, text
        finally:
            embedder.gate.set()
