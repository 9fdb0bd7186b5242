"""``vectors_before_ack``: a message write returns once its vector is stored, so another
process's vector search finds it right after the ack (``serve --workers N`` turns it on:
a search there cannot wait for the writing process's in-memory vector queue)."""

from __future__ import annotations

from pathlib import Path

from backends.sqlite import SQLiteBackend
from nams_local.embeddings import HashingEmbedder
from nams_local.models import NewMessage

from .files import queued_vectors


async def test_another_store_finds_each_acked_message_by_vector_at_once(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    writer = SQLiteBackend(
        db, embedder=HashingEmbedder(), extraction="off", vectors_before_ack=True
    )
    reader = SQLiteBackend(db, embedder=HashingEmbedder(), extraction="off")
    driver = writer.store.driver.module
    try:
        conv = await writer.create_conversation("u")
        view = writer.for_workspace("default")  # views keep the setting
        try:
            for n, topic in enumerate(["harbour cranes", "violin lessons", "tax forms"] * 3):
                text = f"{topic} number {n} zeta{n}"
                owner = view if n % 2 else writer
                stored = await owner.add_message(conv.id, "user", text)
                assert queued_vectors(db, driver) == 0  # its vector is stored, not only queued
                found = await reader.search_messages(conv.id, text, limit=3, mode="vector")
                assert found.search_type == "vector"
                assert stored.id in [m.id for m in found.items]
            bulk = await view.add_messages(
                conv.id,
                [NewMessage(role="user", content=f"bulk kiwi {k} omega{k}") for k in range(5)],
            )
            assert queued_vectors(db, driver) == 0
            for k, message in enumerate(bulk):
                found = await reader.search_messages(
                    conv.id, f"bulk kiwi {k} omega{k}", limit=5, mode="vector"
                )
                assert message.id in [m.id for m in found.items]
        finally:
            await view.aclose()
    finally:
        await reader.aclose()
        await writer.aclose()
