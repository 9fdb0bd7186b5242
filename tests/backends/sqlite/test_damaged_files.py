"""Corrupt or foreign database files: one clear error on open, a 503 when found later.

Issue 15, item 5: on main at 295f78a a truncated file, a garbage header or a text file
failed deep in SQLAlchemy (``serve`` and ``info`` printed a 123-line traceback), and 64 KB of
garbage in the middle of a file opened silently and then answered 500 on search.
"""

from __future__ import annotations

import random
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from backends.sqlite import SQLiteBackend
from nams_local.errors import DatabaseFileError
from nams_local.server import create_app
from tests.asgi import in_process
from tests.server.support import Api, assert_error

PAGE = 4096


def _garbage(size: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(size)


@pytest.fixture(scope="module")
def good_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real database of ~100 pages: one conversation with 300 messages."""
    import asyncio

    path = tmp_path_factory.mktemp("good") / "good.db"

    async def fill() -> None:
        async with SQLiteBackend(path, embeddings=False, extraction="off") as store:
            conv = await store.create_conversation("u1")
            for i in range(300):
                await store.add_message(conv.id, "user", f"note {i} about apples " * 6)

    asyncio.run(fill())
    return path


def _truncated(good: bytes) -> bytes:
    return good[: len(good) // 2]


def _garbage_header(good: bytes) -> bytes:
    return _garbage(100, 1) + good[100:]


def _text(good: bytes) -> bytes:
    return b"this is a text file, not a database\n" * 200


def _garbage_in_the_middle(good: bytes) -> bytes:
    start = (len(good) * 3 // 4) // PAGE * PAGE
    return good[:start] + _garbage(min(65536, len(good) - start), 2) + good[start + 65536 :]


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (_truncated, "truncated"),
        (_garbage_header, "not an SQLite database"),
        (_text, "not an SQLite database"),
        (_garbage_in_the_middle, "damaged"),
    ],
)
def test_a_damaged_or_foreign_file_is_refused_on_open_in_one_line(
    good_db: Path, tmp_path: Path, damage: Callable[[bytes], bytes], expected: str
) -> None:
    """Reproduces: these raised a raw driver error (or, garbage in the middle, opened
    silently). Now ``DatabaseFileError`` naming the path and the problem, on one line."""
    path = tmp_path / "bad.db"
    path.write_bytes(damage(good_db.read_bytes()))
    with pytest.raises(DatabaseFileError) as raised:
        SQLiteBackend(path, embeddings=False, extraction="off")
    message = raised.value.message
    assert str(path) in message and expected in message and "\n" not in message, message


def test_a_missing_directory_is_named(tmp_path: Path) -> None:
    path = tmp_path / "missing" / "memory.db"
    with pytest.raises(DatabaseFileError, match="does not exist"):
        SQLiteBackend(path, embeddings=False)
    assert not path.parent.exists()


async def test_damage_found_later_answers_503_with_a_message(good_db: Path, tmp_path: Path) -> None:
    """Reproduces: a damaged index found after open answered 500. Now 503 naming the
    damage (``DatabaseFileError`` in the library), and the server keeps answering."""
    path = tmp_path / "live.db"
    shutil.copy(good_db, path)
    size = path.stat().st_size
    async with SQLiteBackend(path, embeddings=False, extraction="off") as store:
        [conv] = await store.list_conversations()
        with path.open("r+b") as handle:  # damaged under the running store
            handle.seek(size // 2 // PAGE * PAGE)
            handle.write(_garbage(size // 2 - PAGE, 3))
        with pytest.raises(DatabaseFileError, match="damaged"):
            await store.list_messages(conv.id, limit=200)
        app = create_app(store, api_keys=["k=default"])  # the store's own workspace
        async with in_process(app) as client:
            api = Api(client, "k")
            listed = await api.get(f"/v1/conversations/{conv.id}/messages?limit=200")
            assert "damaged" in assert_error(listed, 503)
            searched = await api.post(
                f"/v1/conversations/{conv.id}/search", json={"query": "apples"}
            )
            assert "damaged" in assert_error(searched, 503)
            assert (await client.get("/healthz")).status_code == 200
