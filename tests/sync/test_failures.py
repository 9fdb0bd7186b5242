"""What a person can get wrong with ``nams-local sync``: one line, a non-zero exit,
nothing written."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_cli_failures import assert_one_line_failure
from tests.ports import closed_port

from .conftest import Target, run_sync
from .content import seed


async def test_an_unreachable_endpoint_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / "source.db"
    await seed(db, conversations=1, messages=1)
    with closed_port() as port:
        done = run_sync(
            ["--to", f"http://127.0.0.1:{port}/v1", "--api-key", "k", "--db", str(db)], tmp_path
        )
    assert_one_line_failure(done, "nams-local sync: cannot reach", str(port))
    assert not list(tmp_path.glob("source.db.sync-*"))  # no checkpoint for a sync never begun


async def test_a_refused_key_is_one_line(tmp_path: Path, target: Target) -> None:
    db = tmp_path / "source.db"
    await seed(db, conversations=1, messages=1)
    done = run_sync(["--to", target.endpoint, "--api-key", "wrong", "--db", str(db)], tmp_path)
    assert_one_line_failure(done, "nams-local sync:", "refused the API key")


async def test_a_missing_database_or_key_is_one_line(tmp_path: Path, target: Target) -> None:
    missing, db = tmp_path / "nope.db", tmp_path / "source.db"
    done = run_sync(["--to", target.endpoint, "--api-key", "k", "--db", str(missing)], tmp_path)
    assert_one_line_failure(done, "no database at", str(missing))
    assert not missing.exists()
    await seed(db, conversations=1, messages=1)
    done = run_sync(["--to", target.endpoint, "--db", str(db)], tmp_path)
    assert_one_line_failure(done, "needs an API key")


async def test_a_checkpoint_of_another_sync_is_refused(tmp_path: Path, target: Target) -> None:
    db, checkpoint = tmp_path / "source.db", tmp_path / "sync.json"
    await seed(db, conversations=1, messages=1)
    checkpoint.write_text(
        json.dumps({"version": 1, "identity": {"direction": "to", "source": "a", "target": "b"}})
    )
    args = ["--to", target.endpoint, "--api-key", target.key, "--db", str(db)]
    done = run_sync([*args, "--checkpoint", str(checkpoint)], tmp_path)
    assert_one_line_failure(done, "belongs to another sync (a -> b)")
