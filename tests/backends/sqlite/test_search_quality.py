"""Retrieval that only meaning can explain, and the engine's search plumbing.

The first test is the reason the local engine embeds at all: "where do I live?" shares no
word with "User is from Delhi.", so only vectors can find it among unrelated chat.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from backends.sqlite import SQLiteBackend
from nams_local import HashingEmbedder, NewMessage, NotSupportedError, default_embedder
from nams_local.embeddings import MiniLMEmbedder
from nams_local.models import SearchMode
from tests.data.unrelated_chat import UNRELATED_CHAT

FACT = "User is from Delhi."
LIVED = "I have lived in Delhi since May."


async def _fill(backend: SQLiteBackend, lines: list[str], user: str = "u1") -> str:
    conv = await backend.create_conversation(user)
    for start in range(0, len(lines), 100):
        batch = [NewMessage(role="user", content=text) for text in lines[start : start + 100]]
        await backend.add_messages(conv.id, batch)
    return conv.id


@pytest.mark.parametrize("mode", ["vector", None])
async def test_meaning_alone_finds_where_the_user_lives(mode: SearchMode | None) -> None:
    lines = [*UNRELATED_CHAT[:137], FACT, *UNRELATED_CHAT[137:]]
    async with SQLiteBackend(":memory:", embedder=default_embedder()) as backend:
        conv = await _fill(backend, lines)
        result = await backend.search_messages(conv, "where do I live?", limit=3, mode=mode)
    assert result.search_type == (mode or "hybrid")
    assert FACT in [m.content for m in result.items]


async def test_text_only_finds_through_the_stemmed_shared_word() -> None:
    lines = [*UNRELATED_CHAT[:50], LIVED, *UNRELATED_CHAT[50:120], FACT, *UNRELATED_CHAT[120:]]
    async with SQLiteBackend(":memory:", embeddings=False) as backend:
        conv = await _fill(backend, lines)
        lived = await backend.search_messages(conv, "where do I live?", limit=3)
        delhi = await backend.search_messages(conv, "Delhi", limit=3)
        with pytest.raises(NotSupportedError):
            await backend.search_messages(conv, "where do I live?", mode="vector")
    assert lived.search_type == "text"
    assert [m.content for m in lived.items] == [LIVED]
    assert delhi.search_type == "text"
    assert {m.content for m in delhi.items} == {LIVED, FACT}


async def test_numpy_fallback_ranks_like_sqlite_vec() -> None:
    """The two indexes rank the same vectors the same. Float32 products, so the two stores'
    vectors are equal: with int8 products a text's vector depends slightly on the texts
    batched with it, and the stores' batches follow timing (near-ties then swap)."""
    lines = [*UNRELATED_CHAT, FACT, LIVED]
    embedder = MiniLMEmbedder(int8_compute=False)
    rankings = []
    for index in ("sqlite-vec", "numpy"):
        async with SQLiteBackend(":memory:", embedder=embedder, vector_index=index) as backend:
            assert backend.info()["vector_index"] == index
            conv = await _fill(backend, lines)
            found = []
            for query in ("where do I live?", "snacks", "learning a board game"):
                result = await backend.search_messages(conv, query, limit=5, mode="vector")
                found.append([(m.content, round(m.score or 0.0, 4)) for m in result.items])
            rankings.append(found)
    assert rankings[0] == rankings[1]


async def test_reopening_with_embeddings_indexes_old_messages(tmp_path: Path) -> None:
    db = tmp_path / "mem.db"
    async with SQLiteBackend(db, embeddings=False) as backend:
        conv = await _fill(backend, [*UNRELATED_CHAT[:40], FACT])
    async with SQLiteBackend(db, embedder=HashingEmbedder()) as backend:
        assert backend.info()["embedder"] == "hashing-384"
        hits = await backend.search_messages(conv, "user from delhi", limit=1, mode="vector")
        assert [m.content for m in hits.items] == [FACT]
    # A different embedder makes the index be rebuilt, never mixed.
    async with SQLiteBackend(db, embedder=default_embedder()) as backend:
        hits = await backend.search_messages(conv, "where do I live?", limit=3, mode="vector")
        assert FACT in [m.content for m in hits.items]


async def test_scores_are_in_unit_range_and_sorted() -> None:
    async with SQLiteBackend(":memory:", embedder=HashingEmbedder()) as backend:
        conv = await _fill(backend, [*UNRELATED_CHAT[:60], FACT, LIVED])
        for mode in ("text", "vector", "hybrid"):
            result = await backend.search_messages(conv, "Delhi chess", limit=10, mode=mode)
            scores = [m.score for m in result.items]
            assert scores, mode
            assert all(s is not None and 0.0 <= s <= 1.0 for s in scores), mode
            assert scores == sorted((s or 0.0 for s in scores), reverse=True), mode


async def test_a_driver_that_cannot_load_extensions_falls_back_to_numpy() -> None:
    """The standard ``sqlite3`` of this Python cannot load sqlite-vec: vectors still work."""
    lines = [*UNRELATED_CHAT[:100], FACT]
    async with SQLiteBackend(":memory:", embedder=default_embedder(), driver="sqlite3") as backend:
        info = backend.info()
        assert info["driver"] == "sqlite3"
        assert info["vector_index"] == "numpy"
        assert str(info["sqlite_vec"]).startswith("unavailable")
        conv = await _fill(backend, lines)
        result = await backend.search_messages(conv, "where do I live?", limit=3, mode="vector")
    assert result.search_type == "vector"
    assert FACT in [m.content for m in result.items]
