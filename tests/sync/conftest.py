"""One real ``nams-local serve`` target for the sync tests, one workspace per test (its own
key), and ``nams-local sync`` run the way a user runs it: as a subprocess."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from backends.hosted import HostedBackend
from tests.server.processes import ServeProcess, serve_process

#: Keys the target accepts, each with its own workspace; a test takes the next one.
KEYS = [f"sync-key-{n}" for n in range(24)]
_next_key = itertools.count()


@dataclass
class Target:
    serve: ServeProcess
    key: str
    #: The target server's database file: read directly (``SupportsPagedReads``) where the
    #: wire's 200-per-list bound would hide part of what the target holds.
    db: Path

    @property
    def endpoint(self) -> str:
        return f"{self.serve.base_url}/v1"

    @property
    def workspace(self) -> str:
        return f"{self.key}-workspace"


@pytest.fixture(scope="module")
def target_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sync-target") / "target.db"


@pytest.fixture(scope="module")
def serve(target_db: Path) -> Iterator[ServeProcess]:
    tmp = target_db.parent
    args = ["--db", str(target_db), "--no-embeddings", "--extraction", "off"]
    args += ["--port", "0"]
    for key in KEYS:
        args += ["--api-key", f"{key}={key}-workspace"]
    with serve_process(args, tmp, stderr=tmp / "serve.log") as process:
        yield process


@pytest.fixture
def target(serve: ServeProcess, target_db: Path) -> Target:
    return Target(serve, KEYS[next(_next_key) % len(KEYS)], target_db)


@pytest.fixture
async def target_client(target: Target) -> AsyncIterator[HostedBackend]:
    async with HostedBackend(target.key, endpoint=target.endpoint) as client:
        yield client


def sync_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_", "NAMS_"))}
    env.update(HOME=str(tmp_path), HF_HUB_OFFLINE="1", **extra)
    return env


def sync_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "nams_local.cli", "sync", *args]


def push_args(db: Path, target: Target, checkpoint: Path, *more: str) -> list[str]:
    """`sync --to` the target from `db`, with its own checkpoint and a JSON report."""
    return [
        "--to",
        target.endpoint,
        "--api-key",
        target.key,
        "--db",
        str(db),
        "--checkpoint",
        str(checkpoint),
        "--json",
        *more,
    ]


def run_sync(
    args: Sequence[str], tmp_path: Path, *, timeout: float = 300.0, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        sync_command(*args),
        capture_output=True,
        text=True,
        env=sync_env(tmp_path, **env),
        timeout=timeout,
        check=False,
    )


def report_of(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The ``--json`` report of a sync that succeeded."""
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report
