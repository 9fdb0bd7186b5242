"""The write path under concurrency: grouped commits, read-your-writes, isolated failures.

Writes are committed in groups by the writer lane and embedded afterwards by the vector
lane; these tests hold the writer at a gate so a group is certain to form, then check that
every acknowledged message is found by text and by vector search right after its own ack,
and that a failing member of a group fails alone and leaves nothing behind.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from sqlalchemy import insert, select

from backends.sqlite import SQLiteBackend
from backends.sqlite import schema as s
from backends.sqlite.store import Ctx
from nams_local import HashingEmbedder, InvalidInputError, NotFoundError
from nams_local.embeddings import Embedder, default_embedder
from nams_local.models import Message

WRITERS = 32


@asynccontextmanager
async def gated(backend: SQLiteBackend, expected: int) -> AsyncIterator[None]:
    """Hold the writer thread on a unit of work while the body submits writes; on exit,
    wait until ``expected`` jobs are queued behind it (so they commit as one group), then
    let it go."""
    gate = threading.Event()
    entered = threading.Event()

    def hold(ctx: Ctx) -> None:
        entered.set()
        assert gate.wait(timeout=30), "the test never opened the gate"

    store = backend.store
    holder = asyncio.ensure_future(store.run(hold, Ctx(store, backend.workspace)))
    assert await asyncio.to_thread(entered.wait, 30)
    try:
        yield
        deadline = asyncio.get_running_loop().time() + 30
        while store.writer.queued < expected:
            assert asyncio.get_running_loop().time() < deadline, "the writes never queued"
            await asyncio.sleep(0.005)
    finally:
        gate.set()
        await holder


async def _write_then_read(backend: SQLiteBackend, conv_id: str, text: str) -> Message:
    """One writer: its message, then its own reads right after the ack."""
    stored = await backend.add_message(conv_id, "user", text)
    by_text = await backend.search_messages(conv_id, text, mode="text", limit=1)
    assert [m.id for m in by_text.items] == [stored.id]
    by_vector = await backend.search_messages(conv_id, text, mode="vector", limit=1)
    assert [m.id for m in by_vector.items] == [stored.id]
    return stored


async def _concurrent_writers(db: Path, embedder: Embedder) -> None:
    async with SQLiteBackend(db, embedder=embedder, extraction="off") as backend:
        convs = [await backend.create_conversation(f"user-{i % 8}") for i in range(WRITERS)]
        texts = [
            f"writer {i} reports the {i * 7}th cargo manifest from harbour {i}"
            for i in range(WRITERS)
        ]
        async with gated(backend, WRITERS):
            writers = [
                asyncio.ensure_future(_write_then_read(backend, conv.id, text))
                for conv, text in zip(convs, texts, strict=True)
            ]
        stored = await asyncio.gather(*writers)
        assert backend.store.writer.largest_group >= WRITERS
        assert len({m.id for m in stored}) == WRITERS
        # The user's other conversations see them too (cross-session vector search).
        hits = await backend.search_user_messages("user-3", texts[3], per_conversation_limit=1)
        assert stored[3].id in {m.id for group in hits for m in group.messages}


async def test_concurrent_writers_read_their_own_writes(tmp_path: Path) -> None:
    await _concurrent_writers(tmp_path / "hashing.db", HashingEmbedder())


@pytest.mark.slow
async def test_concurrent_writers_read_their_own_writes_with_the_real_model(
    tmp_path: Path,
) -> None:
    await _concurrent_writers(tmp_path / "minilm.db", default_embedder())


async def test_one_failing_member_of_a_group_fails_alone(tmp_path: Path) -> None:
    async with SQLiteBackend(
        tmp_path / "m.db", embedder=HashingEmbedder(), extraction="sync"
    ) as backend:
        conv = await backend.create_conversation("u1")
        store = backend.store

        def writes_then_breaks(ctx: Ctx) -> None:
            ctx.conn.execute(
                insert(s.conversations).values(
                    id="half-written",
                    workspace=ctx.workspace,
                    user_id="u1",
                    metadata="{}",
                    message_count=0,
                    created_at="2026-01-01T00:00:00+00:00",
                    updated_at="2026-01-01T00:00:00+00:00",
                )
            )
            raise RuntimeError("the unit broke after writing")

        # Refused before it is ever grouped: nothing reaches the writer.
        with pytest.raises(InvalidInputError):
            await backend.add_message(conv.id, "user", "   ")
        # A member that refuses its input (not found) has written nothing: it fails alone
        # and the rest of its group commits without a replay.
        async with gated(backend, 4):
            fine = [
                asyncio.ensure_future(backend.add_message(conv.id, "user", f"warm-up {i}"))
                for i in range(3)
            ]
            lost = asyncio.ensure_future(backend.add_message("nowhere", "user", "lost words"))
        assert len(await asyncio.gather(*fine)) == 3
        with pytest.raises(NotFoundError):
            await lost
        assert store.writer.replays == 0
        async with gated(backend, 12):
            good = [
                asyncio.ensure_future(
                    backend.add_message(conv.id, "user", f"Maya lives in Porto, note {i}")
                )
                for i in range(10)
            ]
            missing = asyncio.ensure_future(
                backend.add_message("no-such-conversation", "user", "lost words")
            )
            broken = asyncio.ensure_future(store.run(writes_then_breaks, Ctx(store, "default")))
        stored = await asyncio.gather(*good)
        with pytest.raises(NotFoundError):
            await missing
        with pytest.raises(RuntimeError, match="broke after writing"):
            await broken
        assert backend.store.writer.largest_group >= 12
        assert store.writer.replays == 1  # the unit that broke after writing

        listed = await backend.list_messages(conv.id, limit=50)
        notes = [m for m in listed if m.content.startswith("Maya")]
        assert sorted(m.id for m in notes) == sorted(m.id for m in stored)
        assert (await backend.get_conversation(conv.id)).message_count == 13
        assert (await backend.search_messages(conv.id, "lost words", mode="text")).items == []
        with pytest.raises(NotFoundError):
            await backend.get_conversation("half-written")
        # The group was rolled back and its members replayed alone: each extracted once.
        status = await backend.get_extraction_status(conv.id)
        assert [u.status for u in status.units] == ["done"] * 13
        assert [u.attempts for u in status.units] == [1] * 13
        porto = await backend.get_entity_by_name("Porto")
        assert porto is not None

        def count_half_written(ctx: Ctx) -> int:
            c = s.conversations
            return len(ctx.conn.execute(select(c.c.pk).where(c.c.id == "half-written")).all())

        assert await store.run(count_half_written, Ctx(store, "default")) == 0
