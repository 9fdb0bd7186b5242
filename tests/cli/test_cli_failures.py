"""Every CLI failure a person can cause: one line on stderr, a non-zero exit, no traceback.

Issue 15, items 6 to 8, run as a user runs them: the real ``nams-local`` executable
(``python -m nams_local.cli``) in a subprocess. On main at 295f78a most of these printed a
traceback (up to 123 lines), and ``NAMS_BACKEND=foo`` was silently accepted.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from backends.sqlite import SQLiteBackend
from nams_local.mcp_serve import open_configured_backend
from tests.server.processes import serve_process
from tests.server.support import bearer

FAKE_MISSING_MCP = 'raise ModuleNotFoundError("No module named \'mcp\'", name="mcp")\n'


def nams_local(
    home: Path, *args: str, env: dict[str, str] | None = None, pythonpath: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``nams-local <args>`` in a clean environment with a home of its own."""
    paths = [p for p in (pythonpath, os.environ.get("PYTHONPATH")) if p]
    full = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "NAMS_LOCAL_DB": ":memory:",
        "HF_HUB_OFFLINE": "1",
        **({"PYTHONPATH": os.pathsep.join(paths)} if paths else {}),
        **(env or {}),
    }
    return subprocess.run(
        [sys.executable, "-m", "nams_local.cli", *args],
        capture_output=True,
        text=True,
        env=full,
        timeout=120,
        check=False,
    )


def assert_one_line_failure(done: subprocess.CompletedProcess[str], *expected: str) -> str:
    """Non-zero exit, no traceback, exactly one line on stderr containing ``expected``."""
    lines = done.stderr.splitlines()
    assert done.returncode != 0, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    assert len(lines) == 1, done.stderr
    for text in expected:
        assert text in lines[0], lines[0]
    return lines[0]


def _text_file(tmp: Path) -> Path:
    path = tmp / "notes.db"
    path.write_text("not a database\n" * 100)
    return path


def _newer_schema(tmp: Path) -> Path:
    path = tmp / "newer.db"
    asyncio.run(SQLiteBackend(path, embeddings=False).aclose())
    with sqlite3.connect(path) as raw:
        raw.execute("UPDATE schema_version SET version = 999")
    raw.close()
    return path


def _truncated(tmp: Path) -> Path:
    good = _newer_schema(tmp).read_bytes()
    path = tmp / "truncated.db"
    path.write_bytes(good[: len(good) // 2])
    return path


DB_CASES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "missing directory": (lambda tmp: tmp / "nowhere" / "memory.db", "does not exist"),
    "not a database": (_text_file, "not an SQLite database"),
    "truncated": (_truncated, "truncated"),
    "newer schema": (_newer_schema, "schema version 999"),
}


@pytest.mark.parametrize("command", ["info", "serve"])
@pytest.mark.parametrize("case", sorted(DB_CASES))
def test_a_bad_database_path_is_one_line(tmp_path: Path, command: str, case: str) -> None:
    make, expected = DB_CASES[case]
    db = make(tmp_path)
    extra = ["--port", "0"] if command == "serve" else []
    done = nams_local(tmp_path, command, "--db", str(db), "--no-embeddings", *extra)
    assert_one_line_failure(done, f"nams-local {command}:", str(db), expected)


@contextlib.contextmanager
def read_only_directory(folder: Path) -> Iterator[Path]:
    """A directory nobody can create a file in. ``chmod 555`` stops every user but root;
    root (this sandbox, CI) gets a read-only tmpfs mounted there instead, which stops root
    too. Where root may not mount (an unprivileged container) the case cannot be made."""
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield folder
        finally:
            folder.chmod(0o755)
        return
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"root cannot mount a read-only tmpfs here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], timeout=30, check=True)


def test_a_read_only_directory_is_one_line(tmp_path: Path) -> None:
    with read_only_directory(tmp_path / "ro") as folder:
        done = nams_local(tmp_path, "info", "--db", str(folder / "m.db"), "--no-embeddings")
    assert_one_line_failure(done, "not writable")


@pytest.mark.parametrize("command", ["info", "demo", "serve"])
def test_an_unknown_backend_setting_is_refused(tmp_path: Path, command: str) -> None:
    """Reproduces: ``NAMS_BACKEND=foo`` was silently accepted by info, demo and serve."""
    extra = ["--port", "0"] if command == "serve" else []
    done = nams_local(tmp_path, command, "--no-embeddings", *extra, env={"NAMS_BACKEND": "foo"})
    assert_one_line_failure(done, "NAMS_BACKEND", "'foo'")


@pytest.mark.parametrize("command", ["info", "serve"])
def test_an_unknown_extraction_setting_is_refused(tmp_path: Path, command: str) -> None:
    extra = ["--port", "0"] if command == "serve" else []
    done = nams_local(tmp_path, command, "--no-embeddings", *extra, env={"NAMS_EXTRACTION": "foo"})
    assert_one_line_failure(done, "NAMS_EXTRACTION", "'foo'")


@pytest.mark.parametrize("key", [" ", "has space"])
def test_a_bad_api_key_is_one_line(tmp_path: Path, key: str) -> None:
    done = nams_local(tmp_path, "serve", "--no-embeddings", "--port", "0", "--api-key", key)
    assert_one_line_failure(done, "invalid API key option")


@pytest.mark.parametrize(
    "args",
    [
        ["serve", "--port", "70000"],
        ["serve", "--port", "-1"],
        ["serve", "--port", "eighty"],
        ["mcp", "--transport", "http", "--port", "65536"],
    ],
)
def test_a_port_out_of_range_is_one_line(tmp_path: Path, args: list[str]) -> None:
    done = nams_local(tmp_path, *args)
    assert done.returncode == 2
    assert_one_line_failure(done, "--port")


def test_mcp_without_its_extra_names_the_extra(tmp_path: Path) -> None:
    """The ``mcp`` package made unimportable by a module that raises as a missing one does."""
    (tmp_path / "no_mcp" / "mcp").mkdir(parents=True)
    (tmp_path / "no_mcp" / "mcp" / "__init__.py").write_text(FAKE_MISSING_MCP)
    done = nams_local(tmp_path, "mcp", pythonpath=str(tmp_path / "no_mcp"))
    assert_one_line_failure(done, "nams-local[mcp]")


@pytest.mark.parametrize("where", [["--debug", "info"], ["info", "--debug"]])
def test_debug_shows_the_traceback(tmp_path: Path, where: list[str]) -> None:
    db = _text_file(tmp_path)
    done = nams_local(tmp_path, *where, "--db", str(db), "--no-embeddings")
    assert done.returncode != 0
    assert "Traceback" in done.stderr and "DatabaseFileError" in done.stderr


def test_info_follows_the_hosted_configuration(tmp_path: Path) -> None:
    """Reproduces item 7: with ``MEMORY_API_KEY`` set, ``info`` described the local engine.
    Now it reports hosted, and reaches it (a real ``serve`` stands in for hosted NAMS)."""
    with serve_process(
        ["--port", "0", "--no-embeddings", "--db", str(tmp_path / "s.db")], tmp_path
    ) as server:
        env = {"MEMORY_API_KEY": "k1", "MEMORY_ENDPOINT": f"{server.base_url}/v1"}
        done = nams_local(tmp_path, "info", "--json", env=env)
    assert done.returncode == 0, done.stderr
    details = json.loads(done.stdout)
    assert details["backend"] == "hosted" and details["endpoint"] == f"{server.base_url}/v1"
    assert details["reachable"].startswith("yes")


def test_info_says_why_hosted_cannot_be_reached(tmp_path: Path, closed_port: int) -> None:
    # A port kept bound and not listening: refused for the whole test (a port that was
    # merely free a moment ago could be taken by a parallel test's server meanwhile).
    endpoint = f"http://127.0.0.1:{closed_port}/v1"
    env = {"MEMORY_API_KEY": "k1", "MEMORY_ENDPOINT": endpoint}
    done = nams_local(tmp_path, "info", env=env)
    assert_one_line_failure(done, "cannot reach hosted NAMS", endpoint)


def test_info_lists_serves_workspaces_and_opens_one(tmp_path: Path) -> None:
    """Reproduces item 8: data written through ``serve`` (per-token workspaces) was
    invisible to ``info`` and ``mcp``. Now ``info`` lists the workspaces, and
    ``--workspace`` opens one in ``info`` and in ``mcp``."""
    db = tmp_path / "served.db"
    with serve_process(["--port", "0", "--no-embeddings", "--db", str(db)], tmp_path) as server:
        headers = bearer("alice-token")
        with httpx.Client(base_url=server.base_url, timeout=30) as http:
            conv = http.post("/v1/conversations", json={"userId": "alice"}, headers=headers)
            assert conv.status_code == 201, conv.text
            workspace = conv.json()["workspaceId"]
            added = http.post(
                f"/v1/conversations/{conv.json()['id']}/messages",
                json={"role": "user", "content": "I live in Pune."},
                headers=headers,
            )
            assert added.status_code == 201, added.text
        server.stop()
    listed = nams_local(tmp_path, "info", "--db", str(db), "--no-embeddings", "--json")
    assert listed.returncode == 0, listed.stderr
    workspaces = json.loads(listed.stdout)["workspaces"]
    assert workspaces[workspace]["conversations"] == 1
    assert workspaces[workspace]["messages"] == 1
    opened = nams_local(
        tmp_path, "info", "--db", str(db), "--no-embeddings", "--workspace", workspace
    )
    assert opened.returncode == 0, opened.stderr
    assert any(line.split() == ["workspace", workspace] for line in opened.stdout.splitlines()), (
        opened.stdout
    )

    async def through_mcp_wiring() -> list[str | None]:
        backend = open_configured_backend(str(db), False, workspace)
        try:
            return [c.user_id for c in await backend.list_conversations()]
        finally:
            await backend.aclose()

    assert asyncio.run(through_mcp_wiring()) == ["alice"]
