"""A big bulk's full-text entries are written after its commit, in small writer units, and
text search still finds every acknowledged message (``backends/sqlite/deferred_fts.py``).

The real engine on a real file. Where a test needs the queued rows to still be there when
it searches, it turns the background indexer off (as if the process had died right after
the ack), so the only thing that can make the search find them is the search itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlean

from backends.sqlite import SQLiteBackend, deferred_fts, fts_backlog
from backends.sqlite.deferred_fts import CHUNK_CHARS, DEFER_CHARS
from nams_local import NewMessage
from nams_local.errors import TooManyRequestsError

ROOT = Path(__file__).resolve().parents[3]
#: A hostile bulk: 100 messages of 9,000 characters (about 90 % of the 1 MiB body limit).
BULK = 100
CHARS = 9_000


def long_message(i: int) -> NewMessage:
    word = f"marker{i:03d}x"
    filler = "lorem ipsum dolor sit amet " * (CHARS // 27)
    return NewMessage(role="user", content=f"{word} {filler}"[:CHARS])


def queued(db: Path) -> int:
    """Rows in the file's queue, read on a connection of the test's own."""
    with contextlib.closing(sqlean.connect(str(db))) as conn:
        (count,) = conn.execute("SELECT count(*) FROM fts_queue").fetchone()
    return int(count)


def test_a_big_bulk_defers_its_full_text_entries() -> None:
    assert BULK * CHARS > DEFER_CHARS
    assert deferred_fts.should_defer(BULK * CHARS)
    assert not deferred_fts.should_defer(2_000)


def test_a_just_acked_bulk_is_found_by_text_search_although_nothing_indexed_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(deferred_fts, "_schedule", lambda store, ctx: None)
    db = tmp_path / "bulk.db"

    async def scenario() -> None:
        hostile = SQLiteBackend(db, embeddings=False, extraction="off", workspace="hostile")
        other = hostile.for_workspace("other")
        try:
            conv = await hostile.create_conversation(user_id="u")
            other_conv = await other.create_conversation(user_id="v")
            await other.add_message(other_conv.id, "user", "marker005x is a word here too")
            await hostile.add_messages(conv.id, [long_message(i) for i in range(BULK)])
            assert queued(db) == BULK  # acknowledged, not indexed
            # Another workspace's search neither waits for nor indexes the hostile rows.
            found = await other.search_messages(other_conv.id, "marker005x", 10)
            assert [m.content for m in found.items] == ["marker005x is a word here too"]
            assert queued(db) == BULK
            # The hostile workspace's own search settles its queue, then finds each one.
            for i in (0, 57, BULK - 1):
                result = await hostile.search_messages(conv.id, f"marker{i:03d}x", 5)
                assert [m.content.split()[0] for m in result.items] == [f"marker{i:03d}x"]
            assert queued(db) == 0
        finally:
            await hostile.aclose()
            await other.aclose()

    asyncio.run(scenario())


def test_the_indexing_runs_in_small_writer_units_after_the_commit(tmp_path: Path) -> None:
    db = tmp_path / "chunks.db"

    async def scenario() -> None:
        backend = SQLiteBackend(db, embeddings=False, extraction="off", workspace="hostile")
        try:
            conv = await backend.create_conversation(user_id="u")
            writer = backend.store.writer
            before = writer.stats.request.groups
            await backend.add_messages(conv.id, [long_message(i) for i in range(BULK)])
            deadline = time.monotonic() + 60
            while queued(db):
                assert time.monotonic() < deadline, "the queued rows were never indexed"
                await asyncio.sleep(0.01)
            groups = writer.stats.request.groups - before
            # The bulk's own unit, then the indexing in chunks of at most CHUNK_CHARS.
            assert groups >= 1 + (BULK * CHARS) // CHUNK_CHARS
            result = await backend.search_messages(conv.id, "marker042x", 5)
            assert [m.content.split()[0] for m in result.items] == ["marker042x"]
        finally:
            await backend.aclose()

    asyncio.run(scenario())


CHILD = r"""
import asyncio, sys

from backends.sqlite import SQLiteBackend, deferred_fts
from nams_local import NewMessage

# Nothing indexes in the background: the kill leaves every bulk's rows queued (each bulk
# of 20 x ~2,000 characters is deferred; a few stay under the backlog bound).
deferred_fts._schedule = lambda store, ctx: None


async def main(db: str) -> None:
    backend = SQLiteBackend(db, embeddings=False, extraction="off", workspace="w")
    conv = await backend.create_conversation(user_id="u")
    print(conv.id, flush=True)
    n = 0
    while True:
        bulk = [
            NewMessage(role="user", content=f"bulk{n}word{i} " + "padding text " * 150)
            for i in range(20)
        ]
        await backend.add_messages(conv.id, bulk)
        print(f"bulk{n}", flush=True)
        n += 1


asyncio.run(main(sys.argv[1]))
"""


def test_kill_9_with_indexing_queued_loses_nothing_and_resumes_on_open(tmp_path: Path) -> None:
    db = tmp_path / "crash.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db)], stdout=subprocess.PIPE, text=True, env=env
    )
    acked: list[str] = []
    try:
        assert child.stdout is not None
        conversation_id = child.stdout.readline().strip()
        deadline = time.monotonic() + 60
        while len(acked) < 3:
            assert time.monotonic() < deadline, "the child never acknowledged three bulks"
            line = child.stdout.readline().strip()
            assert line, "the child ended early"
            acked.append(line)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        if child.stdout is not None:
            child.stdout.close()
    assert queued(db) >= 3 * 20  # the kill left the acknowledged bulks unindexed

    async def reopen() -> None:
        backend = SQLiteBackend(db, embeddings=False, extraction="off", workspace="w")
        try:
            # Opening resumes the indexing in the background, without any search.
            deadline = time.monotonic() + 60
            while queued(db):
                assert time.monotonic() < deadline, "the queued rows were never indexed"
                await asyncio.sleep(0.01)
            for bulk in acked:
                for i in (0, 19):
                    result = await backend.search_messages(conversation_id, f"{bulk}word{i}", 3)
                    assert [m.content.split()[0] for m in result.items] == [f"{bulk}word{i}"]
        finally:
            await backend.aclose()

    asyncio.run(reopen())


def test_a_workspace_whose_big_writes_outrun_its_index_waits_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``MAX_BACKLOG_CHARS`` un-indexed, a workspace's next big write waits (then 429,
    nothing written); another workspace's big write does not; once the backlog is indexed
    the workspace writes again."""
    monkeypatch.setattr(deferred_fts, "_schedule", lambda store, ctx: None)
    monkeypatch.setattr(fts_backlog, "WAIT_SECONDS", 0.5)
    db = tmp_path / "backlog.db"
    bulk = [long_message(i) for i in range(BULK)]
    bulks_over_bound = fts_backlog.MAX_BACKLOG_CHARS // (BULK * CHARS) + 1

    async def scenario() -> None:
        hostile = SQLiteBackend(db, embeddings=False, extraction="off", workspace="hostile")
        other = hostile.for_workspace("other")
        try:
            conv = await hostile.create_conversation(user_id="u")
            for _ in range(bulks_over_bound):
                await hostile.add_messages(conv.id, bulk)
            with pytest.raises(TooManyRequestsError):
                await hostile.add_messages(conv.id, bulk)
            assert (await hostile.get_conversation(conv.id)).message_count == (
                bulks_over_bound * BULK
            )
            other_conv = await other.create_conversation(user_id="v")
            await other.add_messages(other_conv.id, bulk)  # not held by the hostile backlog
            # A search indexes the hostile queue; the backlog is gone and writes go on.
            await hostile.search_messages(conv.id, "marker001x", 5)
            await hostile.add_messages(conv.id, bulk)
        finally:
            await hostile.aclose()
            await other.aclose()

    asyncio.run(scenario())
