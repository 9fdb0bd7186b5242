"""``nams-local export`` / ``import`` as a person runs them: the real CLI in a subprocess.

Round trip through files and stdout, a second import that changes nothing, and the
failures a person can cause (a cut file, another format version, a missing database):
one line, a non-zero exit, and nothing of the bad batch written.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest

from tests.backends.sqlite.seeded import ALICE_SECRET, open_store, seed
from tests.cli.test_cli_failures import assert_one_line_failure, nams_local


def _rows(db: Path) -> dict[str, int]:
    conn = sqlite3.connect(db)
    try:
        tables = [
            name
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
                " AND name NOT LIKE '%fts%'"
            )
        ]
        return {t: conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}
    finally:
        conn.close()


@pytest.fixture(scope="module")
def seeded_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("export-cli") / "source.db"

    async def build() -> None:
        backend = open_store(db, embeddings=False)
        try:
            await seed(backend)
        finally:
            await backend.aclose()

    asyncio.run(build())
    return db


def _records(text: str) -> list[str]:
    return text.splitlines()[1:]


def test_round_trip_through_the_cli(seeded_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "memory.jsonl"
    done = nams_local(tmp_path, "export", "--db", str(seeded_db), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert "exported" in done.stderr
    target = tmp_path / "target.db"
    done = nams_local(tmp_path, "import", str(out), "--db", str(target), "--no-embeddings")
    assert done.returncode == 0, done.stderr
    assert "already present" in done.stdout and " 0 skipped" in done.stdout
    again = nams_local(tmp_path, "export", "--db", str(target), "-o", "-")
    assert again.returncode == 0, again.stderr
    first = out.read_text()
    assert ALICE_SECRET in first
    assert _records(again.stdout) == _records(first)
    assert not (tmp_path / "memory.jsonl.partial").exists()


def test_import_twice_changes_nothing(seeded_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "memory.jsonl"
    assert nams_local(tmp_path, "export", "--db", str(seeded_db), "-o", str(out)).returncode == 0
    target = tmp_path / "target.db"
    args = ("import", str(out), "--db", str(target), "--no-embeddings", "--json")
    first = nams_local(tmp_path, *args)
    assert first.returncode == 0, first.stderr
    rows = _rows(target)
    second = nams_local(tmp_path, *args)
    assert second.returncode == 0, second.stderr
    report = json.loads(second.stdout)
    assert report["added"] == {}
    assert report["present"] == json.loads(first.stdout)["records"]
    assert _rows(target) == rows


def test_a_truncated_file_fails_with_one_line_and_writes_nothing(
    seeded_db: Path, tmp_path: Path
) -> None:
    out = tmp_path / "memory.jsonl"
    assert nams_local(tmp_path, "export", "--db", str(seeded_db), "-o", str(out)).returncode == 0
    lines = out.read_bytes().splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"".join(lines[: len(lines) // 2]) + lines[len(lines) // 2][:10])
    target = tmp_path / "target.db"
    done = nams_local(tmp_path, "import", str(cut), "--db", str(target), "--no-embeddings")
    assert_one_line_failure(done, "nams-local import:", "cut short")
    # The file is smaller than one batch: nothing at all was written.
    assert _rows(target)["conversations"] == 0
    assert _rows(target)["messages"] == 0


def test_another_format_version_fails_before_the_database_is_opened(tmp_path: Path) -> None:
    file = tmp_path / "future.jsonl"
    file.write_text('{"format":"nams-local-export","version":9,"workspace":"w"}\n')
    target = tmp_path / "target.db"
    done = nams_local(tmp_path, "import", str(file), "--db", str(target))
    assert_one_line_failure(done, "version 9 is not supported")
    assert not target.exists()


def test_export_of_a_missing_database_fails_with_one_line(tmp_path: Path) -> None:
    done = nams_local(tmp_path, "export", "--db", str(tmp_path / "nope.db"), "-o", "-")
    assert_one_line_failure(done, "no database at")
    assert not (tmp_path / "nope.db").exists()


def test_export_of_one_user(seeded_db: Path, tmp_path: Path) -> None:
    done = nams_local(tmp_path, "export", "--db", str(seeded_db), "--user", "bob", "-o", "-")
    assert done.returncode == 0, done.stderr
    assert ALICE_SECRET not in done.stdout
    assert json.loads(done.stdout.splitlines()[0])["user"] == "bob"
