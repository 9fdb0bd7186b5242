"""``serve --workers 2`` writers take turns on the file's writer lock (``write_lock.py``).

A real supervisor and two real workers on one file; the clients are pinned to each worker
(``test_workers.pinned``) and write at once through both. Each worker's writer trace
(``NAMS_WRITER_TRACE`` with ``{pid}``) ends, at its graceful stop, with its lane's lock
figures: both must have taken every transaction under the lock, waited for the other at
least once, and never given up on it.
"""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

from .processes import serve_process
from .support import bearer
from .test_workers import WORKERS, pinned


async def test_both_workers_take_turns_on_the_lock_and_keep_every_acked_write(
    tmp_path: Path,
) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    args = ["--port", "0", "--db", str(tmp_path / "w.db"), "--no-embeddings"]
    with serve_process(
        [*args, "--workers", str(WORKERS)],
        tmp_path,
        stderr=tmp_path / "serve.log",
        start_timeout=240,
        extra_env={"NAMS_WRITER_TRACE": str(traces / "{pid}.jsonl")},
    ) as served:
        per_worker, per_writer = 6, 15
        async with pinned(served.base_url, per_worker=per_worker) as by_pid:
            headers = bearer("turns")
            pids = sorted(by_pid)

            async def writer(pid: int, n: int) -> tuple[str, list[str]]:
                client = by_pid[pid][n]
                made = await client.post(
                    "/v1/conversations", json={"user_id": f"u{pid}-{n}"}, headers=headers
                )
                assert made.status_code == 201, made.text
                conversation = made.json()["id"]
                acked = []
                for j in range(per_writer):
                    answer = await client.post(
                        f"/v1/conversations/{conversation}/messages",
                        json={"role": "user", "content": f"message {j} of {pid}/{n}"},
                        headers=headers,
                    )
                    assert answer.status_code == 201, answer.text
                    acked.append(answer.json()["id"])
                return conversation, acked

            written = await asyncio.gather(
                *(writer(pid, n) for pid in pids for n in range(per_worker))
            )
            # Read back through the other worker: every acknowledged message is there.
            for index, (conversation, acked) in enumerate(written):
                other = by_pid[pids[1 - index // per_worker]][0]
                listed = await other.get(
                    f"/v1/conversations/{conversation}/messages", headers=headers
                )
                assert listed.status_code == 200, listed.text
                assert {m["id"] for m in listed.json()["messages"]} >= set(acked)
        assert served.stop(signal.SIGINT, timeout=60) == 0
    ends = {}
    for trace in traces.glob("*.jsonl"):
        lines = [json.loads(line) for line in trace.read_text().splitlines()]
        ends[int(trace.stem)] = lines[-1]
    assert set(pids) <= set(ends), (pids, sorted(ends))
    for pid in pids:
        end = ends[pid]
        assert end["end"] is True
        assert end["acquired"] == end["begins"] > 0, end
        assert end["gave_up"] == 0, end
    assert sum(ends[pid]["contended"] for pid in pids) > 0  # they did take turns
