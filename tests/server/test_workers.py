"""``nams-local serve --workers 2``: two real worker processes on one socket and one file.

Each client here holds one keep-alive connection, and ``GET /healthz`` names the process
behind it, so a test can write through one worker and read through the other: what a
load balancer does to a client whose requests land on different processes.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path

import httpx
import pytest

from .processes import ServeProcess, serve_process
from .support import bearer

WORKERS = 2


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """One ``serve --workers 2`` for the read-only-of-each-other tests of this module
    (each uses its own tokens, so workspaces never overlap)."""
    folder = tmp_path_factory.mktemp("workers")
    with _serve(folder) as process:
        yield process
    assert process.process.returncode is not None


def _serve(folder: Path) -> AbstractContextManager[ServeProcess]:
    args = ["--port", "0", "--db", str(folder / "w.db"), "--no-embeddings"]
    return serve_process(
        [*args, "--workers", str(WORKERS)], folder, stderr=folder / "serve.log", start_timeout=240
    )


Pinned = dict[int, list[httpx.AsyncClient]]


@asynccontextmanager
async def pinned(base_url: str, per_worker: int) -> AsyncIterator[Pinned]:
    """``per_worker`` one-connection clients for each worker pid (fails if some worker
    never answers: both must serve)."""
    async with AsyncExitStack() as stack:
        by_pid: Pinned = {}
        for _ in range(40 * per_worker):
            client = await stack.enter_async_context(
                httpx.AsyncClient(
                    base_url=base_url,
                    timeout=60,
                    limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
                )
            )
            answer = await client.get("/healthz")
            assert answer.status_code == 200
            group = by_pid.setdefault(int(answer.json()["pid"]), [])
            if len(group) < per_worker:
                group.append(client)
            if len(by_pid) == WORKERS and all(len(g) >= per_worker for g in by_pid.values()):
                yield by_pid
                return
        raise AssertionError(f"not every worker answered: {sorted(by_pid)}")


def _children(pid: int) -> set[int]:
    """Every live descendant of ``pid`` (Linux ``/proc``)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[0] != "Z":
                parents.setdefault(int(fields[1]), []).append(int(entry.name))
    found: set[int] = set()
    frontier = [pid]
    while frontier:
        for child in parents.get(frontier.pop(), []):
            found.add(child)
            frontier.append(child)
    return found


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


async def test_both_workers_serve_and_every_acked_write_is_found_by_the_other(
    served: ServeProcess,
) -> None:
    writers, per_writer = 8, 12
    async with pinned(served.base_url, per_worker=writers) as by_pid:
        pids = sorted(by_pid)
        assert set(pids) <= _children(served.process.pid), "pids are not the workers"
        headers = bearer("read-your-writes")

        async def writer(i: int) -> list[str]:
            here, there = by_pid[pids[i % 2]][i // 2], by_pid[pids[1 - i % 2]][i // 2]
            made = await here.post("/v1/conversations", json={"user_id": f"u{i}"}, headers=headers)
            assert made.status_code == 201, made.text
            conv = made.json()["id"]
            missed: list[str] = []
            for j in range(per_writer):
                word = f"marker{i}x{j}q"
                acked = await here.post(
                    f"/v1/conversations/{conv}/messages",
                    json={"role": "user", "content": f"note {j} of writer {i}: {word}"},
                    headers=headers,
                )
                assert acked.status_code == 201, acked.text
                found = await there.post(
                    f"/v1/conversations/{conv}/search", json={"query": word}, headers=headers
                )
                assert found.status_code == 200, found.text
                if acked.json()["id"] not in [m["id"] for m in found.json()["messages"]]:
                    missed.append(word)
            return missed

        missed = await asyncio.gather(*(writer(i) for i in range(writers)))
        assert [m for m in missed if m] == []


def test_bursts_of_connections_are_spread_over_the_workers(served: ServeProcess) -> None:
    """Ten bursts of 64 connections, all made before any request: each worker gets at
    least a quarter of every burst. On one shared listening socket the worker woken first
    accepted every connection queued by then, and keep-alive clients stay where they land
    (bursts split 52/12, 57/7, 60/4; 26 of 32 connections of a ``load --workers 2`` run on
    one worker); each worker now listens on a socket of its own (``SO_REUSEPORT``) and the
    kernel spreads connections over them."""
    url = httpx.URL(served.base_url)
    assert url.host and url.port
    pids = _children(served.process.pid)
    for _ in range(10):
        conns = [http.client.HTTPConnection(url.host, url.port, timeout=60) for _ in range(64)]
        try:
            for conn in conns:
                conn.connect()
            for conn in conns:
                conn.request("GET", "/healthz")
            counts = Counter(int(json.loads(conn.getresponse().read())["pid"]) for conn in conns)
        finally:
            for conn in conns:
                conn.close()
        assert set(counts) <= pids, "pids are not the workers"
        assert len(counts) == WORKERS and min(counts.values()) >= 16, counts


def test_a_second_serve_with_workers_on_the_same_port_is_refused(
    served: ServeProcess, tmp_path: Path
) -> None:
    """The workers' sockets share their port (``SO_REUSEPORT``); another ``serve --workers``
    of the same user must still find the port taken, not quietly split its connections."""
    port = served.base_url.rsplit(":", 1)[1]
    second = subprocess.run(
        [sys.executable, "-m", "nams_local.cli", "serve", "--port", port, "--no-embeddings",
         "--db", str(tmp_path / "other.db"), "--workers", str(WORKERS)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )  # fmt: skip
    assert second.returncode == 1, second.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in second.stderr


async def test_one_entity_per_name_when_both_workers_extract_it(served: ServeProcess) -> None:
    headers = bearer("entities-on-both")
    async with pinned(served.base_url, per_worker=3) as by_pid:
        clients = [c for group in by_pid.values() for c in group]

        async def say(client: httpx.AsyncClient) -> str:
            made = await client.post("/v1/conversations", json={}, headers=headers)
            assert made.status_code == 201, made.text
            conv: str = made.json()["id"]
            said = await client.post(
                f"/v1/conversations/{conv}/messages",
                json={"role": "user", "content": "Last week I flew to Lima for work."},
                headers=headers,
            )
            assert said.status_code == 201, said.text
            return conv

        conversations = await asyncio.gather(*(say(c) for c in clients))
        deadline = time.monotonic() + 120
        for client, conv in zip(clients, conversations, strict=True):
            while True:
                status = await client.get(
                    f"/v1/conversations/{conv}/extraction-status", headers=headers
                )
                assert status.status_code == 200, status.text
                if status.json()["summary"].get("done") == 1:
                    break
                assert time.monotonic() < deadline, status.text
                await asyncio.sleep(0.05)  # between polls of a condition
        for group in by_pid.values():
            listed = await group[0].get("/v1/entities", headers=headers)
            assert listed.status_code == 200, listed.text
            names = [e["name"] for e in listed.json()["entities"]]
            assert names.count("Lima") == 1, names


async def test_a_key_revoked_through_one_worker_is_refused_by_every_worker(
    served: ServeProcess,
) -> None:
    async with pinned(served.base_url, per_worker=1) as by_pid:
        first, second = (by_pid[pid][0] for pid in sorted(by_pid))
        minted = await first.post(
            "/v1/auth/api-keys", json={"label": "ci"}, headers=bearer("key-owner")
        )
        assert minted.status_code == 201, minted.text
        key, key_id = minted.json()["key"], minted.json()["id"]
        for client in (first, second):  # cached as valid in both processes
            assert (await client.get("/v1/conversations", headers=bearer(key))).status_code == 200
        revoked = await first.delete(f"/v1/auth/api-keys/{key_id}", headers=bearer("key-owner"))
        assert revoked.status_code == 200, revoked.text
        for client in (second, first):
            refused = await client.get("/v1/conversations", headers=bearer(key))
            assert refused.status_code == 401, refused.text


def test_a_dead_worker_is_replaced_and_sigterm_leaves_no_process(tmp_path: Path) -> None:
    with _serve(tmp_path) as served:
        supervisor = served.process.pid
        workers = set(_worker_pids(supervisor))
        assert len(workers) == WORKERS
        victim = min(workers)
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + 90
        while True:
            now = set(_worker_pids(supervisor))
            if len(now) == WORKERS and victim not in now:
                break
            assert time.monotonic() < deadline, f"no replacement for {victim}: {now}"
            time.sleep(0.05)  # between polls of a condition
        replacement = (now - workers).pop()
        seen: set[int] = set()
        with httpx.Client(base_url=served.base_url, timeout=30) as http:
            while replacement not in seen:  # the new worker serves
                with httpx.Client(base_url=served.base_url, timeout=30) as fresh:
                    seen.add(int(fresh.get("/healthz").json()["pid"]))
                assert time.monotonic() < deadline, f"{replacement} never answered: {seen}"
            assert http.get("/v1/conversations", headers=bearer("t")).status_code == 200
        everything = _children(supervisor)
        assert everything >= now
        assert served.stop(signal.SIGTERM, timeout=90) == 0
        left = {pid for pid in everything if _running(pid)}
        assert left == set()
    log = (tmp_path / "serve.log").read_text()
    assert f"worker 1 (pid {victim})" in log or f"worker 2 (pid {victim})" in log


def _worker_pids(supervisor: int) -> list[int]:
    return [pid for pid in _children(supervisor) if _parent(pid) == supervisor]


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--db", ":memory:", "--workers", "2"], "needs a database file"),
        (["--bridge", "--workers", "2"], "--bridge needs --workers 1"),
        (["--workers", "0"], "at least 1"),
        # Refused by the engine in the first worker: serve stops with the worker's status.
        (["--workers", "2", "--no-embeddings", "--cypher-timeout", "0"], "cypher timeout"),
    ],
)
def test_settings_that_cannot_run_on_several_workers_are_refused(
    tmp_path: Path, args: list[str], says: str
) -> None:
    db = ["--db", str(tmp_path / "r.db")] if "--db" not in args else []
    done = subprocess.run(
        [sys.executable, "-m", "nams_local.cli", "serve", "--port", "0", *db, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert done.returncode == 2, done
    assert says in done.stderr
    assert "serving" not in done.stdout
