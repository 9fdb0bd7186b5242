"""A store whose database file is deleted or replaced fails every request and
acknowledges no write into the file it still holds open."""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from backends.sqlite import SQLiteBackend
from backends.sqlite.conversations import create_conversation
from backends.sqlite.store import Ctx
from nams_local.embeddings import HashingEmbedder
from nams_local.errors import BackendUnavailableError

from .files import SUFFIXES, messages_in, move_away
from .merging import merges_settled


def _open(path: Path) -> SQLiteBackend:
    return SQLiteBackend(path, embedder=HashingEmbedder(), extraction="off")


async def _every_request_fails(backend: SQLiteBackend, conversation: str, what: str) -> None:
    calls: dict[str, Callable[[], Awaitable[object]]] = {
        "write": lambda: backend.add_message(conversation, "user", "after the file went"),
        "new conversation": lambda: backend.create_conversation("late"),
        "read on a reader thread": lambda: backend.list_messages(conversation),
        "read on the writer": backend.get_graph,
        "search": lambda: backend.search_messages(conversation, "file"),
    }
    for name, call in calls.items():
        with pytest.raises(BackendUnavailableError, match=what):
            await call()
            raise AssertionError(f"{name} answered")


async def test_a_deleted_file_fails_requests_and_is_not_recreated(tmp_path: Path) -> None:
    path = tmp_path / "gone.db"
    backend = _open(path)
    try:
        conversation = (await backend.create_conversation("u1")).id
        await backend.add_message(conversation, "user", "before the delete")
        assert [m.content for m in await backend.list_messages(conversation)]
        for suffix in SUFFIXES:
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        await _every_request_fails(backend, conversation, "was deleted")
    finally:
        await backend.aclose()
    assert not path.exists()  # no reader opened a new, empty file in its place


async def test_a_replaced_file_fails_requests_and_both_files_stay_whole(
    tmp_path: Path,
) -> None:
    path, kept = tmp_path / "live.db", tmp_path / "kept.db"
    backend = _open(path)
    try:
        conversation = (await backend.create_conversation("u1")).id
        await backend.add_message(conversation, "user", "acknowledged before")
        # Its vector is stored just after the ack (the vector lane): let that finish, so
        # the store's last look at the path is the replaced file, not the moment between.
        await backend.search_messages(conversation, "acknowledged before", mode="vector")
        # Likewise the writer's idle-time merging of full-text segments, which looks at
        # the file before each step: it would see the moment between and say "deleted".
        await merges_settled(backend)
        move_away(path, kept)
        other = _open(path)  # someone puts another database at the path
        other_conversation = (await other.create_conversation("u2")).id
        await other.add_message(other_conversation, "user", "the new file's own")
        await other.aclose()
        await _every_request_fails(backend, conversation, "was replaced by another file")
    finally:
        await backend.aclose()
    assert messages_in(kept) == ["acknowledged before"]
    assert messages_in(path) == ["the new file's own"]


async def test_a_write_is_not_committed_when_the_file_goes_during_it(tmp_path: Path) -> None:
    path, kept = tmp_path / "live.db", tmp_path / "kept.db"
    backend = _open(path)
    store = backend.store
    try:
        await backend.create_conversation("before")

        def write_then_lose_the_file() -> None:
            create_conversation(Ctx(store, "default"), "during", None)
            move_away(path, kept)

        with pytest.raises(BackendUnavailableError, match="was deleted"):
            store.run_sync(write_then_lose_the_file)
    finally:
        await backend.aclose()
    conn = sqlite3.connect(kept)
    try:
        users = [u for (u,) in conn.execute("SELECT user_id FROM conversations")]
    finally:
        conn.close()
    assert users == ["before"]


async def test_a_relative_path_survives_a_change_of_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path)
    backend = _open(Path("relative.db"))
    try:
        monkeypatch.chdir(tmp_path / "elsewhere")  # the file is where it was
        conversation = (await backend.create_conversation("u1")).id
        assert await backend.list_messages(conversation) == []
        # Engines opened only now (inline reads, exports) open the same file too.
        with backend.store.snapshot() as read:
            ids = read(lambda conn: conn.exec_driver_sql("SELECT id FROM conversations").all())
        assert [row.id for row in ids] == [conversation]
    finally:
        await backend.aclose()
