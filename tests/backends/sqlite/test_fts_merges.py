"""Full-text segments are merged while the writer is idle (``fts_merges.py``): a store
written one message per transaction ends up with few segments, and every search answers
exactly what it answered before the merge."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
import sqlean.dbapi2 as sqlite

from backends.sqlite import SQLiteBackend
from backends.sqlite.fts_merges import USERMERGE, FtsMerges, configure
from nams_local.models import NewMessage

from .merging import merges_settled

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india"]


def _segments(path: Path, table: str) -> int:
    """Segments of ``table``'s index: each has its own rows in the ``_idx`` table."""
    with sqlite.connect(path) as conn:
        return int(conn.execute(f"SELECT count(DISTINCT segid) FROM {table}_idx").fetchone()[0])


async def test_segments_of_single_writes_are_merged_and_searches_unchanged(
    tmp_path: Path,
) -> None:
    path = tmp_path / "merge.sqlite3"
    backend = SQLiteBackend(path, embeddings=False, extraction="off")
    try:
        writer = backend.store._writer
        await asyncio.wrap_future(writer.call(writer.use_merges, None))
        conv = await backend.create_conversation(user_id="u")
        # Bulks of ten varied messages, one transaction each (FTS5 merges its level 0 once
        # it holds 16 segments: stop before that).
        fragmented = 0
        for n in range(1, 150):
            bulk = [
                NewMessage(
                    role="user",
                    content=f"note {n} {i} "
                    + " ".join(
                        f"{WORDS[(n * i + j) % len(WORDS)]}{(n * 7 + j) % 50}" for j in range(8)
                    ),
                )
                for i in range(10)
            ]
            await backend.add_messages(conv.id, bulk)
            fragmented = _segments(path, "messages_fts")
            if fragmented >= 8:
                break
        assert fragmented >= 8, f"the bulks left only {fragmented} segments"
        first = bulk[0].content.split()
        queries = ["note", first[3], " ".join(first[4:6]), " ".join(first[5:9])]
        before = [
            [(m.id, m.score) for m in (await backend.search_messages(conv.id, q, limit=10)).items]
            for q in queries
        ]
        assert all(before), before  # every query finds something to compare

        await asyncio.wrap_future(writer.call(writer.use_merges, FtsMerges()))
        merges = await merges_settled(backend)
        merged = _segments(path, "messages_fts")
        assert merges.merged >= 1
        assert merged < fragmented / 2, (fragmented, merged)
        after = [
            [(m.id, m.score) for m in (await backend.search_messages(conv.id, q, limit=10)).items]
            for q in queries
        ]
        assert after == before
    finally:
        await backend.aclose()


async def test_a_write_after_merging_makes_the_writer_merge_again(tmp_path: Path) -> None:
    backend = SQLiteBackend(tmp_path / "again.sqlite3", embeddings=False, extraction="off")
    try:
        conv = await backend.create_conversation(user_id="u")
        merges = await merges_settled(backend)
        steps = merges.steps
        await backend.add_message(conv.id, "user", "one more message about lima")
        await merges_settled(backend)
        assert merges.steps > steps  # the commit made the tables pending again
        hits = await backend.search_messages(conv.id, "lima", limit=5)
        assert [m.content for m in hits.items] == ["one more message about lima"]
    finally:
        await backend.aclose()


def test_configure_sets_usermerge_once(tmp_path: Path) -> None:
    with sqlite.connect(tmp_path / "c.sqlite3") as conn:
        conn.execute("CREATE VIRTUAL TABLE t_fts USING fts5(body)")
        configure(conn, ["t_fts"])
        row = conn.execute("SELECT v FROM t_fts_config WHERE k = 'usermerge'").fetchone()
        assert int(row[0]) == USERMERGE
        changes = conn.total_changes
        configure(conn, ["t_fts"])
        assert conn.total_changes == changes  # already set: nothing written


class _AlwaysPending(FtsMerges):
    """Merges that never run out of work: the writer steps whenever it is idle."""

    @property
    def pending(self) -> bool:
        return True

    def step(self, conn: Any) -> None:
        self.steps += 1


async def test_closing_while_the_writer_merges_ends_merging_with_the_connection(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A merge step after the connection closed took the file's writer lock and then failed
    # with "This Connection is closed" (seen in CI when a serve worker stopped).
    backend = SQLiteBackend(tmp_path / "closing.sqlite3", embeddings=False, extraction="off")
    writer = backend.store._writer
    busy = _AlwaysPending()
    await asyncio.wrap_future(writer.call(writer.use_merges, busy))
    await backend.create_conversation(user_id="u")
    deadline = asyncio.get_running_loop().time() + 30
    while busy.steps < 3:  # idle: the writer steps back to back
        assert asyncio.get_running_loop().time() < deadline, "the idle writer never merged"
        await asyncio.sleep(0.02)
    with caplog.at_level(logging.WARNING, logger="nams_local.sqlite"):
        await backend.aclose()
    assert "merging" not in caplog.text
    stats = writer.lock_stats
    assert stats.acquired == stats.begins > 0
