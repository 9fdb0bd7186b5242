"""``SupportsPagedReads`` on the local engine: every conversation and message of one
workspace, oldest first, in keyset pages that neither skip nor repeat a row, bounded."""

from __future__ import annotations

from pathlib import Path

import pytest

from backends.sqlite import SQLiteBackend
from nams_local.backend import MAX_PAGE_LIMIT, SupportsPagedReads
from nams_local.errors import InvalidInputError, NotFoundError
from nams_local.models import NewMessage


def _messages(n: int, tag: str) -> list[NewMessage]:
    return [NewMessage(role="user", content=f"{tag} {i}") for i in range(n)]


async def test_pages_walk_a_workspace_in_creation_order() -> None:
    async with SQLiteBackend(":memory:", embeddings=False, extraction="off") as mine:
        assert isinstance(mine, SupportsPagedReads)
        created = [await mine.create_conversation(f"u{n}") for n in range(7)]
        await mine.add_messages(created[2].id, _messages(100, "m"))
        await mine.add_messages(created[2].id, _messages(5, "n"))
        # a newer update must not reorder the pages (creation order, not recency)
        await mine.add_messages(created[0].id, _messages(1, "late"))

        seen: list[str] = []
        after: str | None = None
        while page := await mine.conversations_page(after, 3):
            assert len(page) <= 3
            seen += [c.id for c in page]
            after = page[-1].id
        assert seen == [c.id for c in created]

        contents: list[str] = []
        cursor: str | None = None
        while chunk := await mine.messages_page(created[2].id, cursor, 11):
            contents += [m.content for m in chunk]
            cursor = chunk[-1].id
        assert contents == [f"m {i}" for i in range(100)] + [f"n {i}" for i in range(5)]

        skipped = await mine.messages_page(created[2].id, limit=3, skip=101)
        assert [m.content for m in skipped] == ["n 1", "n 2", "n 3"]


async def test_workspaces_are_apart_and_bad_cursors_and_bounds_are_refused(
    tmp_path: Path,
) -> None:
    db = tmp_path / "two.db"
    async with (
        SQLiteBackend(db, embeddings=False, extraction="off", workspace="a") as a,
        SQLiteBackend(db, embeddings=False, extraction="off", workspace="b") as b,
    ):
        conv_a = await a.create_conversation("u")
        await a.add_messages(conv_a.id, _messages(2, "a"))
        conv_b = await b.create_conversation("u")
        assert [c.id for c in await b.conversations_page()] == [conv_b.id]
        with pytest.raises(NotFoundError):
            await b.messages_page(conv_a.id)
        with pytest.raises(NotFoundError):  # a cursor from another workspace is unknown here
            await b.conversations_page(conv_a.id)
        first = await a.messages_page(conv_a.id, limit=1)
        await a.delete_conversation(conv_a.id)
        with pytest.raises(NotFoundError):
            await a.conversations_page(conv_a.id)
        conv_c = await a.create_conversation("u")
        with pytest.raises(NotFoundError):  # a vanished message cursor is not "start over"
            await a.messages_page(conv_c.id, first[0].id)
        for limit in (0, MAX_PAGE_LIMIT + 1):
            with pytest.raises(InvalidInputError):
                await a.conversations_page(None, limit)
            with pytest.raises(InvalidInputError):
                await a.messages_page(conv_c.id, None, limit)
        with pytest.raises(InvalidInputError):
            await a.messages_page(conv_c.id, skip=-1)
