"""``nams-local sync --to``: a local store replayed into a second ``nams-local serve``,
completely, once, and again after being killed midway or in the crash window."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from backends.hosted import HostedBackend
from backends.sqlite import SQLiteBackend
from nams_local.backend import MAX_LIST_LIMIT
from nams_local.models import NewMessage

from .conftest import Target, push_args, report_of, run_sync, sync_command, sync_env
from .content import seed, snapshot


async def source_snapshot(db: Path) -> dict[str, Any]:
    async with SQLiteBackend(db, embeddings=False, extraction="off") as source:
        return await snapshot(source)


async def test_the_target_ends_with_the_source_content_and_a_second_run_sends_nothing(
    tmp_path: Path, target: Target, target_client: HostedBackend
) -> None:
    db, checkpoint = tmp_path / "source.db", tmp_path / "sync.json"
    await seed(db, conversations=3, messages=7)

    first = report_of(run_sync(push_args(db, target, checkpoint, "--batch-size", "3"), tmp_path))
    assert first["sent"] == {
        "entity": 3,
        "conversation": 3,
        "message": 21,
        "step": 4,
        "tool_call": 2,
        "relationship": 2,
    }
    assert await snapshot(target_client) == await source_snapshot(db)
    # serve keeps everything the local engine holds but the times: only those are reported
    assert set(first["notCarried"]) == {"message times"}

    second = report_of(run_sync(push_args(db, target, checkpoint), tmp_path))
    assert second["sent"] == {}
    assert second["skipped"]["message"] == 21
    assert await snapshot(target_client) == await source_snapshot(db)


def _sent_messages(checkpoint: Path) -> int:
    try:
        body = json.loads(checkpoint.read_text())
    except (OSError, ValueError):  # not written yet (it is replaced atomically, never partial)
        return 0
    return sum(body["messages"].values())


async def test_killed_midway_and_resumed_the_target_has_everything_once(
    tmp_path: Path, target: Target, target_client: HostedBackend
) -> None:
    db, checkpoint = tmp_path / "source.db", tmp_path / "sync.json"
    conversations, messages = 10, 30
    await seed(db, conversations=conversations, messages=messages)

    process = subprocess.Popen(
        sync_command(*push_args(db, target, checkpoint, "--batch-size", "2")),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=sync_env(tmp_path),
    )
    try:
        deadline = time.monotonic() + 120
        while _sent_messages(checkpoint) < 40 and process.poll() is None:
            assert time.monotonic() < deadline, "the sync never got 40 messages across"
            time.sleep(0.005)  # between polls of a condition, not instead of waiting for it
        assert process.poll() is None, "the sync finished before it could be interrupted"
        process.send_signal(signal.SIGKILL)
        assert process.wait(timeout=30) == -signal.SIGKILL
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
        assert process.stderr is not None
        process.stderr.close()

    held = 0
    for conv in await target_client.list_conversations(limit=MAX_LIST_LIMIT):
        held += len(await target_client.list_messages(conv.id, limit=MAX_LIST_LIMIT))
    assert 40 <= held < conversations * messages  # interrupted midway, truly

    resumed = report_of(run_sync(push_args(db, target, checkpoint), tmp_path))
    # the batch in flight at the kill, if it landed, is found on the target ("adopted")
    carried = sum(resumed[k].get("message", 0) for k in ("skipped", "sent", "adopted"))
    assert carried == conversations * messages
    assert await snapshot(target_client) == await source_snapshot(db)


def _rewind(checkpoint: Path, kind: str, source: dict[str, str]) -> None:
    """Make the checkpoint look as if the sync died after the target acknowledged the last
    write of ``kind`` but before that was recorded (the crash window)."""
    body = json.loads(checkpoint.read_text())
    if kind == "message":
        conv = source["message"]
        total = body["messages"][conv]
        body["messages"][conv] = total - 1
        body["pending"] = {"kind": "message", "key": conv, "start": total - 1, "count": 1}
    else:
        del body["ids"][kind][source[kind]]
        body["pending"] = {"kind": kind, "key": source[kind], "start": 0, "count": 0}
    checkpoint.write_text(json.dumps(body))


async def _source_ids(db: Path) -> dict[str, str]:
    """A source record of each kind to rewind: the empty conversation, the last step and
    tool call, and the newest conversation that has messages."""
    async with SQLiteBackend(db, embeddings=False, extraction="off") as source:
        convs = await source.list_conversations(limit=MAX_LIST_LIMIT)
        empty = next(c.id for c in convs if not c.message_count)
        full = next(c.id for c in convs if c.message_count)
        with_steps = [c.id for c in convs if c.message_count][-1]  # the oldest: it has steps
        trace = await source.get_trace(with_steps)
        return {
            "conversation": empty,
            "message": full,
            "step": trace.steps[-1].id,
            "tool_call": trace.tool_calls[-1].id,
        }


@pytest.mark.parametrize("kind", ["conversation", "message", "step", "tool_call", "message+"])
async def test_a_write_acknowledged_but_not_checkpointed_is_found_not_sent_again(
    tmp_path: Path, target: Target, target_client: HostedBackend, kind: str
) -> None:
    """``message+``: the source gained messages before the resume, so the resumed run cuts
    its batches differently from the one in doubt (which must still be found)."""
    db, checkpoint = tmp_path / "source.db", tmp_path / "sync.json"
    await seed(db, conversations=2, messages=3)
    async with SQLiteBackend(db, embeddings=False, extraction="off") as source:
        await source.create_conversation("user-9", {"topic": "nothing said yet"})
    report_of(run_sync(push_args(db, target, checkpoint, "--batch-size", "1"), tmp_path))
    ids = await _source_ids(db)
    _rewind(checkpoint, kind.rstrip("+"), ids)
    if kind == "message+":
        async with SQLiteBackend(db, embeddings=False, extraction="off") as source:
            await source.add_messages(
                ids["message"], [NewMessage(role="user", content=f"later {n}") for n in range(2)]
            )

    resumed = report_of(run_sync(push_args(db, target, checkpoint), tmp_path))
    assert resumed["adopted"] == {kind.rstrip("+"): 1}
    assert resumed["sent"] == ({"message": 2} if kind == "message+" else {})
    assert await snapshot(target_client) == await source_snapshot(db)
    assert json.loads(checkpoint.read_text())["pending"] is None
