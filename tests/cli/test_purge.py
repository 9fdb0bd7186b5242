"""``nams-local purge`` as a user runs it: a subprocess over a real file."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import subprocess
import sys
from pathlib import Path

from tests.cli.test_cli_failures import assert_one_line_failure, nams_local
from tests.purge_seed import Seeded, files_holding, open_engine, seed_user


def _seed(db: Path) -> tuple[Seeded, Seeded]:
    async def run() -> tuple[Seeded, Seeded]:
        async with open_engine(db, embeddings=False) as backend:
            alice = await seed_user(backend, "alice", "zebrafish7731", "Harbourtown")
            bob = await seed_user(backend, "bob", "otterpond5512", "Harbourtown")
            return alice, bob

    return asyncio.run(run())


def _conversations(db: Path, user_id: str) -> int:
    async def run() -> int:
        async with open_engine(db, embeddings=False) as backend:
            return len(await backend.list_conversations(user_id))

    return asyncio.run(run())


def test_purge_deletes_the_user_from_the_file(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    alice, bob = _seed(db)
    assert files_holding(db, alice.marker)
    args = ("purge", "--db", str(db), "--no-embeddings", "--user", alice.user_id, "--yes")
    done = nams_local(tmp_path, *args, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["userId"] == alice.user_id and report["complete"] is True
    assert report["compacted"] is True and report["deleted"]["conversations"] == 3
    assert files_holding(db, alice.marker) == []
    assert _conversations(db, alice.user_id) == 0
    assert _conversations(db, bob.user_id) == 3
    # The human-readable form; a second purge finds nothing, so it does not compact.
    again = nams_local(tmp_path, *args)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(f"purged user {alice.user_id!r}")
    assert "deleted nothing" in again.stdout and "compacted" not in again.stdout
    bobs = nams_local(
        tmp_path, "purge", "--db", str(db), "--no-embeddings", "--user", bob.user_id, "--yes"
    )
    assert bobs.returncode == 0, bobs.stderr
    assert "3 conversations" in bobs.stdout and "compacted the file in" in bobs.stdout
    assert files_holding(db, bob.marker) == []


def test_purge_off_a_terminal_needs_yes(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    alice, _ = _seed(db)
    done = nams_local(
        tmp_path, "purge", "--db", str(db), "--no-embeddings", "--user", alice.user_id
    )
    assert_one_line_failure(done, "nams-local purge:", "--yes")
    assert _conversations(db, alice.user_id) == 3


def test_purge_on_a_terminal_asks_and_a_no_deletes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    alice, _ = _seed(db)
    command = [sys.executable, "-m", "nams_local.cli", "purge", "--db", str(db)]
    command += ["--no-embeddings", "--user", alice.user_id]
    leader, follower = pty.openpty()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
    }
    try:
        process = subprocess.Popen(
            command,
            stdin=follower,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        os.write(leader, b"no\n")
        out, err = process.communicate(timeout=120)
    finally:
        os.close(leader)
        os.close(follower)
    assert process.returncode == 1, err
    assert "cannot be undone" in out and "nothing was deleted" in err
    assert _conversations(db, alice.user_id) == 3


def test_refused_user_id_is_one_line(tmp_path: Path) -> None:
    done = nams_local(tmp_path, "purge", "--no-embeddings", "--user", "x" * 2000, "--yes")
    assert_one_line_failure(done, "nams-local purge:", "user_id is too long")
