"""kill -9 during a bulk ingest with extraction queued: nothing acknowledged is lost, and
the work the dead process left ``pending`` completes once the file is opened again.

The child ingests bulks of messages in ``background`` extraction mode (with an extractor
that never finishes, so a backlog is certain) and prints the ids of each bulk after its ack.
(It once was only slowed down, to 50 ms a message: on a loaded machine the ingest itself
slowed enough for extraction to catch up, and the crash left nothing pending to resume.) The test
kills it with SIGKILL mid-stream, checks on the raw file that extraction was indeed left
pending, then reopens the store: every printed id is there, found by text and by vector
search, and its extraction unit ends ``done`` without anyone calling
``resume_extraction()``.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import sqlean

from backends.sqlite import SQLiteBackend
from nams_local import HashingEmbedder

ROOT = Path(__file__).resolve().parents[3]
#: Bulks acknowledged before the kill, and the time the child gets to reach them (a bound
#: against a hang only: the child needs a few seconds, more on a loaded 2-core machine).
ACKED_BULKS = 12
DEADLINE_SECONDS = 120.0

CHILD = r'''
import asyncio, json, sys

from backends.sqlite import SQLiteBackend
from nams_local import HashingEmbedder, NewMessage
from nams_local.extraction import ExtractionInput, Extraction, RuleExtractor


class StuckRules(RuleExtractor):
    """A model that never answers: every unit stays pending until the kill."""

    async def extract(self, message: ExtractionInput) -> Extraction:
        await asyncio.Event().wait()
        return await super().extract(message)


async def main(db: str) -> None:
    backend = SQLiteBackend(
        db, embedder=HashingEmbedder(), extraction="background", extractor=StuckRules()
    )
    convs = [await backend.create_conversation(user_id=f"user-{i}") for i in range(3)]
    n = 0
    while True:
        conv = convs[n % len(convs)]
        bulk = [
            NewMessage(
                role="user" if j % 2 == 0 else "assistant",
                content=f"I work at Harbourco{n}x{j} and live in Lisbon; manifest {n}-{j} is filed",
            )
            for j in range(10)
        ]
        stored = await backend.add_messages(conv.id, bulk)
        print(json.dumps({"conversation": conv.id, "ids": [m.id for m in stored]}), flush=True)
        n += 1


asyncio.run(main(sys.argv[1]))
'''


def _ingest_then_kill(db: Path, script: Path) -> dict[str, list[str]]:
    """Run the child until ``ACKED_BULKS`` bulks are acknowledged, then SIGKILL it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, str(script), str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert child.stdout is not None
        for line in child.stdout:
            lines.put(line)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    acked: dict[str, list[str]] = {}
    bulks = 0
    deadline = time.monotonic() + DEADLINE_SECONDS
    try:
        while bulks < ACKED_BULKS:
            remaining = deadline - time.monotonic()
            assert remaining > 0, "the child acknowledged too little in time"
            try:
                line = lines.get(timeout=remaining)
            except queue.Empty:
                break
            ack = json.loads(line)
            acked.setdefault(ack["conversation"], []).extend(ack["ids"])
            bulks += 1
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
        reader.join(timeout=10)
        assert child.stderr is not None
        err = child.stderr.read()
        child.stdout.close()  # type: ignore[union-attr]
        child.stderr.close()
    assert bulks == ACKED_BULKS, f"child stopped early; stderr:\n{err}"
    assert child.returncode == -signal.SIGKILL
    # The next lines (if any) were never read: those bulks do not count as acknowledged.
    while not lines.empty():
        lines.get_nowait()
    return acked


def _pending_units(db: Path) -> int:
    """Read the raw file with the engine's own SQLite library (two SQLite copies in one
    process do not share POSIX lock bookkeeping, so the stdlib module must not be used)."""
    with contextlib.closing(sqlean.connect(str(db))) as raw:
        row = raw.execute("SELECT count(*) FROM extraction_units WHERE status = 'pending'")
        return int(row.fetchone()[0])


async def test_kill_9_during_ingest_loses_nothing_and_extraction_resumes(tmp_path: Path) -> None:
    db = tmp_path / "crash.db"
    script = tmp_path / "ingest.py"
    script.write_text(CHILD)
    acked = _ingest_then_kill(db, script)
    assert _pending_units(db) > 0, "the crash left no extraction pending: nothing was tested"

    async with SQLiteBackend(db, embedder=HashingEmbedder(), extraction="background") as reopened:
        for conversation_id, ids in acked.items():
            listed = await reopened.list_messages(conversation_id, limit=200)
            assert set(ids) <= {m.id for m in listed}
        # No resume_extraction(): opening the store resumes the queue by itself.
        for conversation_id in acked:
            await reopened.wait_for_extraction(conversation_id)
        for conversation_id, ids in acked.items():
            status = await reopened.get_extraction_status(conversation_id)
            by_id = {u.message_id: u.status for u in status.units}
            assert {by_id[i] for i in ids} == {"done"}
        conversation_id, ids = next(iter(acked.items()))
        last = next(m for m in await reopened.list_messages(conversation_id) if m.id == ids[-1])
        by_text = await reopened.search_messages(conversation_id, last.content, mode="text")
        by_vector = await reopened.search_messages(conversation_id, last.content, mode="vector")
        assert by_text.items[0].id == last.id
        assert by_vector.items[0].id == last.id
        # What its extraction found is in the graph: the city it mentions.
        lisbon = await reopened.get_entity_by_name("Lisbon", "location")
        assert lisbon is not None
        history = await reopened.get_entity_history(lisbon.id)
        assert last.id in {mention.message_id for mention in history.mentions}
    assert _pending_units(db) == 0
