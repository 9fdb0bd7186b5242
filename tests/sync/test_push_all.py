"""``nams-local sync --to`` copies ALL of a local workspace, past the 200-per-list bound of
the protocol's list routes: a conversation of 450 messages among 205 conversations ends on
the target complete, in order, once, also after a kill -9 inside the long conversation."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from backends.sqlite import SQLiteBackend
from nams_local.models import NewMessage

from .conftest import Target, push_args, report_of, run_sync, sync_command, sync_env

LONG = 450
BEFORE, AFTER = 100, 104  # small conversations created before and after the long one
CONVERSATIONS = BEFORE + 1 + AFTER
SMALL = 2  # messages in each small conversation
TOTAL = LONG + (BEFORE + AFTER) * SMALL

Picture = list[tuple[str | None, str, list[tuple[str, str, str]]]]


async def seed_large(path: Path) -> str:
    """The store described above, in bulk writes; returns the long conversation's id."""
    async with SQLiteBackend(path, embeddings=False, extraction="off") as store:
        long_id = ""
        for c in range(CONVERSATIONS):
            conv = await store.create_conversation(f"user-{c % 3}", {"n": c})
            count = LONG if c == BEFORE else SMALL
            batch = [
                NewMessage(
                    role="user" if m % 2 == 0 else "assistant",
                    content=f"conversation {c} message {m}",
                    metadata={"turn": m} if m % 7 == 0 else None,
                )
                for m in range(count)
            ]
            for start in range(0, count, 100):
                await store.add_messages(conv.id, batch[start : start + 100])
            if c == BEFORE:
                long_id = conv.id
        return long_id


async def picture(db: Path, workspace: str = "default") -> Picture:
    """Every conversation (creation order) with every message (oldest first), ids and
    times aside, read in full through the engine's paged reads: a duplicate, a gap or a
    message out of order anywhere makes two pictures differ."""
    out: Picture = []
    async with SQLiteBackend(db, embeddings=False, extraction="off", workspace=workspace) as b:
        after: str | None = None
        while page := await b.conversations_page(after, 64):
            for conv in page:
                messages: list[tuple[str, str, str]] = []
                cursor: str | None = None
                while chunk := await b.messages_page(conv.id, cursor, 128):
                    messages += [
                        (m.role, m.content, json.dumps(m.metadata, sort_keys=True)) for m in chunk
                    ]
                    cursor = chunk[-1].id
                meta = json.dumps(dict(conv.metadata), sort_keys=True)
                out.append((conv.user_id, meta, messages))
            after = page[-1].id
    return out


def _sent_in(checkpoint: Path, conversation_id: str) -> int:
    try:
        body: dict[str, Any] = json.loads(checkpoint.read_text())
    except (OSError, ValueError):  # not written yet (it is replaced atomically, never partial)
        return 0
    return int(body["messages"].get(conversation_id, 0))


async def test_every_conversation_and_message_goes_across_in_order_and_once(
    tmp_path: Path, target: Target
) -> None:
    db, checkpoint = tmp_path / "source.db", tmp_path / "sync.json"
    long_id = await seed_large(db)
    source = await picture(db)
    assert len(source) == CONVERSATIONS and len(source[BEFORE][2]) == LONG

    first = report_of(run_sync(push_args(db, target, checkpoint, "--batch-size", "3"), tmp_path))
    assert first["sent"]["conversation"] == CONVERSATIONS
    assert first["sent"]["message"] == TOTAL
    assert set(first["notCarried"]) == {"message times"}  # nothing left unread
    assert await picture(target.db, target.workspace) == source

    # the crash window past the 200th message: the long conversation's last batch landed
    # but the kill came before the checkpoint recorded it
    body = json.loads(checkpoint.read_text())
    assert body["messages"][long_id] == LONG
    body["messages"][long_id] = LONG - 3
    body["pending"] = {"kind": "message", "key": long_id, "start": LONG - 3, "count": 3}
    checkpoint.write_text(json.dumps(body))
    resumed = report_of(run_sync(push_args(db, target, checkpoint), tmp_path))
    assert resumed["adopted"] == {"message": 3}
    assert resumed["sent"] == {}
    assert resumed["skipped"]["message"] == TOTAL - 3
    assert await picture(target.db, target.workspace) == source


async def test_killed_inside_the_long_conversation_and_resumed_nothing_is_doubled_or_lost(
    tmp_path: Path, target: Target
) -> None:
    db, checkpoint = tmp_path / "source.db", tmp_path / "sync.json"
    long_id = await seed_large(db)

    process = subprocess.Popen(
        sync_command(*push_args(db, target, checkpoint, "--batch-size", "3")),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=sync_env(tmp_path),
    )
    try:
        deadline = time.monotonic() + 240
        while _sent_in(checkpoint, long_id) < 240 and process.poll() is None:
            assert time.monotonic() < deadline, "the sync never got past message 240"
            time.sleep(0.002)  # between polls of a condition, not instead of waiting for it
        assert process.poll() is None, "the sync finished before it could be interrupted"
        process.send_signal(signal.SIGKILL)
        assert process.wait(timeout=30) == -signal.SIGKILL
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
        assert process.stderr is not None
        process.stderr.close()

    recorded = _sent_in(checkpoint, long_id)
    assert 240 <= recorded < LONG  # killed inside the long conversation, past the 200th
    partial = await picture(target.db, target.workspace)
    assert len(partial) == BEFORE + 1 and len(partial[BEFORE][2]) < LONG

    resumed = report_of(run_sync(push_args(db, target, checkpoint), tmp_path))
    carried = sum(resumed[k].get("message", 0) for k in ("skipped", "sent", "adopted"))
    assert carried == TOTAL
    assert await picture(target.db, target.workspace) == await picture(db)
