"""One tenant at every Cypher limit cannot slow another, over HTTP against ``serve``.

A real ``nams-local serve`` subprocess on a free port, a real file holding a few thousand
entities of one tenant. That tenant fires cartesian queries (each would take minutes and
gigabytes unbounded) from several connections at once; another tenant meanwhile lists its
conversations and writes messages. The other tenant stays fast, the heavy queries are cut
off with the documented errors, and the server's memory stays put. A client that goes
away mid-query takes its query's worker process with it.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from backends.sqlite import SQLiteBackend
from nams_local.server.auth import derived_workspace

from .processes import ServeProcess, serve_process
from .support import bearer

HEAVY = "tenant-heavy"
LIGHT = "tenant-light"
CARTESIAN = "MATCH (a:Entity) MATCH (b:Entity) MATCH (c:Entity) RETURN count(*) AS n"
ENTITIES = 2000
TICKS = os.sysconf("SC_CLK_TCK")


async def _fill(path: Path, count: int) -> None:
    backend = SQLiteBackend(
        path, embeddings=False, extraction="off", workspace=derived_workspace(HEAVY)
    )
    try:
        for i in range(count):
            await backend.add_entity(f"Entity {i}", ("person", "organization", "concept")[i % 3])
    finally:
        await backend.aclose()


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database with the heavy tenant's entities, written once for the module."""
    path = tmp_path_factory.mktemp("cypher-lanes") / "template.db"
    asyncio.run(_fill(path, ENTITIES))
    return path


def _copy(template: Path, tmp_path: Path) -> Path:
    target = tmp_path / "served.db"
    with sqlite3.connect(template) as source, sqlite3.connect(target) as copy:
        source.backup(copy)
    source.close()
    copy.close()
    return target


# -- what /proc says about the server and its worker processes ---------------------------
def _stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(int(entry))
            if fields is not None and int(fields[1]) == pid:
                found.append(int(entry))
    return found


def _workers(server: int) -> list[int]:
    """The Cypher workers: children of the server's forkserver (its grandchildren)."""
    return [pid for child in _children(server) for pid in _children(child)]


def _cpu_ticks(pid: int) -> int:
    fields = _stat(pid)
    return int(fields[11]) + int(fields[12]) if fields is not None else 0


def _alive(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def _status_mb(pid: int, field: str) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1]) / 1024
    except FileNotFoundError:
        pass
    return 0.0


def _rss_mb(pid: int) -> float:
    return _status_mb(pid, "VmRSS")


def _wait_for_workers(server: int, count: int, timeout: float = 120.0) -> list[int]:
    """The server prestarts its workers; wait until ``count`` exist and sit idle."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        workers = _workers(server)
        if len(workers) >= count:
            before = {pid: _cpu_ticks(pid) for pid in workers}
            time.sleep(0.2)  # between two samples of the same counter
            if all(_cpu_ticks(pid) - ticks <= 2 for pid, ticks in before.items()):
                return workers
        time.sleep(0.05)
    raise AssertionError(f"the server never had {count} idle Cypher workers")


@pytest.fixture
def served(
    template: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[ServeProcess]:
    db = _copy(template, tmp_path)
    extra: list[str] = request.param
    args = ["--port", "0", "--db", str(db), "--no-embeddings", *extra]
    with serve_process(args, tmp_path, stderr=tmp_path / "server.log") as process:
        _wait_for_workers(process.process.pid, 2)
        yield process


class _Memory:
    """Samples the server's resident memory (and the largest worker's) in a thread."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.server: list[float] = []
        self.worker: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.1):
            self.server.append(_rss_mb(self.pid))
            self.worker.append(max((_rss_mb(p) for p in _workers(self.pid)), default=0.0))

    def __enter__(self) -> _Memory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


@pytest.mark.parametrize("served", [["--cypher-timeout", "2"]], indirect=True)
def test_a_tenant_at_the_cypher_limits_leaves_another_tenant_fast(served: ServeProcess) -> None:
    base_url, pid = served.base_url, served.process.pid
    stop = threading.Event()
    heavy: list[tuple[int, str]] = []
    retry_after: list[str | None] = []

    def hammer() -> None:
        with httpx.Client(base_url=base_url, timeout=60) as http:
            while not stop.is_set():
                answer = http.post("/v1/query", json={"cypher": CARTESIAN}, headers=bearer(HEAVY))
                heavy.append((answer.status_code, answer.json().get("error", "")))
                if answer.status_code in (429, 503):
                    retry_after.append(answer.headers.get("retry-after"))

    with httpx.Client(base_url=base_url, timeout=30) as http:
        conversation = http.post("/v1/conversations", json={}, headers=bearer(LIGHT)).json()["id"]
        baseline = _rss_mb(pid)
        # A worker caps its address space at what it had when it started plus 512 MB
        # (cypher memory_mb), so its resident size can never pass that: the idle workers'
        # address space is the base (it grows as the package imports more at start-up).
        idle = max((_status_mb(p, "VmSize") for p in _workers(pid)), default=0.0)
        assert idle > 0, "no idle Cypher worker to measure"
        threads = [threading.Thread(target=hammer, daemon=True) for _ in range(6)]
        latencies: list[float] = []
        statuses: list[int] = []
        with _Memory(pid) as memory:
            for thread in threads:
                thread.start()
            # Until the heavy tenant has met the time limit at least twice (the storm is
            # on), for at least ten seconds; bounded at two minutes.
            started = time.monotonic()
            deadline = started + 120
            i = 0
            while time.monotonic() < deadline and (
                time.monotonic() - started < 10 or sum(s == 400 for s, _ in heavy) < 2
            ):
                i += 1
                began = time.perf_counter()
                if i % 3 == 0:
                    answer = http.post(
                        f"/v1/conversations/{conversation}/messages",
                        json={"role": "user", "content": f"note {i}: the lanes hold"},
                        headers=bearer(LIGHT),
                    )
                elif i % 3 == 1:
                    answer = http.get("/v1/conversations", headers=bearer(LIGHT))
                else:
                    answer = http.post("/v1/conversations", json={}, headers=bearer(LIGHT))
                latencies.append(time.perf_counter() - began)
                statuses.append(answer.status_code)
            stop.set()
            for thread in threads:
                thread.join(timeout=60)
    assert all(200 <= s < 300 for s in statuses), statuses
    p95 = statistics.quantiles(latencies, n=20)[-1]
    assert p95 < 1.0, f"the light tenant's p95 was {p95:.3f} s over {len(latencies)} requests"
    # The heavy queries: cut off by the documented limits, never answered otherwise.
    kinds = {s for s, _ in heavy}
    assert kinds <= {400, 429, 503}, heavy
    timed_out = [e for s, e in heavy if s == 400]
    assert len(timed_out) >= 2, heavy
    assert all("time limit of 2 s" in e or "memory limit of" in e for e in timed_out), heavy
    assert all("per-workspace Cypher limit" in e for s, e in heavy if s == 429), heavy
    assert all("Cypher lane is busy" in e for s, e in heavy if s == 503), heavy
    assert all(value is not None and int(value) >= 1 for value in retry_after), retry_after
    # Memory: the server holds projections and answers, never the query's intermediate
    # results (the in-thread interpreter grew it by gigabytes); each worker is capped.
    assert max(memory.server) < baseline + 300, (baseline, max(memory.server))
    assert max(memory.worker) < idle + 512 + 64, (idle, max(memory.worker))


def _send_query(base_url: str, token: str, cypher: str) -> socket.socket:
    """A raw HTTP request whose answer is never read; closing the socket is leaving."""
    host, port = base_url.removeprefix("http://").split(":")
    body = ('{"cypher": "' + cypher.replace('"', '\\"') + '"}').encode()
    head = (
        f"POST /v1/query HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    sock = socket.create_connection((host, int(port)), timeout=10)
    sock.sendall(head + body)
    return sock


@pytest.mark.parametrize(
    "served", [["--cypher-timeout", "120", "--cypher-memory-mb", "3072"]], indirect=True
)
def test_a_client_that_leaves_mid_query_stops_its_query(
    served: ServeProcess, tmp_path: Path
) -> None:
    pid = served.process.pid
    workers = _workers(pid)
    before = {w: _cpu_ticks(w) for w in workers}
    sock = _send_query(served.base_url, HEAVY, CARTESIAN)
    try:
        busy = None
        deadline = time.monotonic() + 60
        while busy is None:
            assert time.monotonic() < deadline, "no worker ever ran the query"
            for worker in _workers(pid):
                if _cpu_ticks(worker) - before.get(worker, 0) >= max(3, TICKS // 20):
                    busy = worker
            time.sleep(0.02)  # between polls of the workers' CPU counters
    finally:
        sock.close()  # the client leaves
    left = time.monotonic()
    # Far below the 120 s time limit (and the 3 GB cap): only the disconnect stops it.
    while _alive(busy):
        assert time.monotonic() - left < 10, f"worker {busy} still runs after the client left"
        time.sleep(0.02)  # between polls of the worker's state
    with httpx.Client(base_url=served.base_url, timeout=30) as http:
        answer = http.post(
            "/v1/query",
            json={"cypher": "MATCH (a:Entity) RETURN count(*) AS n"},
            headers=bearer(HEAVY),
        )
        assert answer.status_code == 200 and answer.json()["rows"] == [{"n": ENTITIES}]
    # The server logged the request as abandoned (499), not as a limit (400).
    log = (tmp_path / "server.log").read_text()
    assert "POST /v1/query 499" in log, log[-2000:]


@pytest.mark.parametrize("option", [["--cypher-timeout", "0"], ["--cypher-memory-mb", "1"]])
def test_a_cypher_limit_out_of_range_is_refused_at_startup(
    option: list[str], tmp_path: Path
) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "nams_local.cli",
            "serve",
            "--port",
            "0",
            "--no-embeddings",
            "--db",
            str(tmp_path / "x.db"),
            *option,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "nams-local serve: cypher" in done.stderr
