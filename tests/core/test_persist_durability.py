"""An acknowledged turn is never lost: ``persist_step`` returns once the turn is committed.

A real subprocess persists turns through the middleware's persistence layer and prints
each turn once ``persist_step`` returned; it is killed with SIGKILL mid-stream, and every
turn it acknowledged must be in the file when it is opened again.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from backends.sqlite import SQLiteBackend
from nams_local.embeddings import HashingEmbedder

_WRITER = """
import asyncio, sys
from backends.sqlite import SQLiteBackend
from nams_local.embeddings import HashingEmbedder
from nams_local.persistence import persist_step
from tests.recording_logger import RecordingLogger

async def main() -> None:
    logger = RecordingLogger()
    async with SQLiteBackend(sys.argv[1], embedder=HashingEmbedder()) as backend:
        conv = await backend.create_conversation("alex")
        print("conv", conv.id, flush=True)
        i = 0
        while True:
            await persist_step(
                backend, conv.id, user_text=f"question {i}", assistant_text=f"answer {i}",
                logger=logger,
            )
            if logger.records:
                print("warning", logger.records, flush=True)
                return
            print("ack", i, flush=True)
            i += 1

asyncio.run(main())
"""

ACKS_BEFORE_KILL = 25
DEADLINE_SECONDS = 60.0


async def test_every_acknowledged_turn_survives_kill_9(tmp_path: Path) -> None:
    path = tmp_path / "turns.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    acked: list[int] = []
    conv_id = ""
    deadline = time.monotonic() + DEADLINE_SECONDS
    try:
        assert proc.stdout is not None
        while len(acked) < ACKS_BEFORE_KILL and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            kind, _, rest = line.strip().partition(" ")
            if kind == "conv":
                conv_id = rest
            elif kind == "ack":
                acked.append(int(rest))
            else:
                raise AssertionError(f"writer reported: {line!r}")
        proc.send_signal(signal.SIGKILL)  # mid-stream: the next turn may be half written
        proc.wait(timeout=10)
        proc.stdout.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert len(acked) == ACKS_BEFORE_KILL, "the writer did not acknowledge in time"
    async with SQLiteBackend(path, embedder=HashingEmbedder(), extraction="off") as backend:
        stored = await backend.list_messages(conv_id, limit=200)
    texts = {m.content for m in stored}
    for i in acked:
        assert f"question {i}" in texts and f"answer {i}" in texts
