"""One of two processes racing to write one file: ``python -m tests.backends.sqlite.write_racer``.

``write_racer <path> <workspace> <seconds> <tasks>`` opens a ``SQLiteBackend`` (no
embeddings, no extraction: the writer's own cost only), creates a conversation, prints
``ready``, waits for one line on stdin (both racers start together), then for ``seconds``
keeps ``tasks`` concurrent ``add_message`` calls going and prints one JSON line: the ids of
every acknowledged message, the writer's commits and units, the lock figures
(``write_lock.LockStats``), its CPU seconds and the longest acknowledgement.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

from backends.sqlite import SQLiteBackend

__all__ = ["race"]


async def race(path: str, workspace: str, seconds: float, tasks: int) -> dict[str, object]:
    backend = SQLiteBackend(path, embeddings=False, workspace=workspace, extraction="off")
    try:
        conversation = await backend.create_conversation("racer")
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        acked: list[str] = []
        longest = 0.0
        cpu = time.process_time()
        deadline = time.monotonic() + seconds

        async def writer(n: int) -> None:
            nonlocal longest
            i = 0
            while time.monotonic() < deadline:
                started = time.monotonic()
                message = await backend.add_message(
                    conversation.id, "user", f"{workspace} writer {n} message {i}"
                )
                longest = max(longest, time.monotonic() - started)
                acked.append(message.id)
                i += 1

        await asyncio.gather(*(writer(n) for n in range(tasks)))
        lane = backend.store.writer
        return {
            "conversation": conversation.id,
            "acked": acked,
            "commits": lane.commits,
            "units": lane.units,
            "lock": lane.lock_stats.as_dict(),
            "cpu": time.process_time() - cpu,
            "longest_ack": longest,
        }
    finally:
        await backend.aclose()


if __name__ == "__main__":
    db, name, secs, count = sys.argv[1:5]
    result = asyncio.run(race(db, name, float(secs), int(count)))
    print(json.dumps(result), flush=True)
