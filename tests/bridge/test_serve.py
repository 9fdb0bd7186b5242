"""``nams-local serve --bridge`` as a real process: on loopback only, off by default."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx

from tests.server.processes import serve_process


def test_serve_bridge_answers_on_loopback_over_its_own_store(tmp_path: Path) -> None:
    db = tmp_path / "real.db"
    args = ["--port", "0", "--db", str(db), "--no-embeddings", "--bridge"]
    with serve_process(args, tmp_path) as served:
        assert served.banner.startswith("nams-local serving")
        with httpx.Client(base_url=f"{served.base_url}/bridge") as http:
            assert http.post("/setup", json={}).json()["protocol_version"] == "0.2.0"
            message = http.post(
                "/add_message", json={"session_id": "s", "role": "user", "content": "hi"}
            )
            assert message.status_code == 200 and message.json()["content"] == "hi"
            assert http.post("/clear_all_data", json={}).status_code == 204
            assert http.post("/list_sessions", json={}).json() == []


def test_the_bridge_is_off_by_default(tmp_path: Path) -> None:
    args = ["--port", "0", "--db", str(tmp_path / "a.db"), "--no-embeddings"]
    with serve_process(args, tmp_path) as served:
        response = httpx.post(f"{served.base_url}/bridge/setup", json={})
        assert response.status_code == 404


def test_the_bridge_refuses_a_non_loopback_address(tmp_path: Path) -> None:
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "nams_local.cli",
            "serve",
            "--host",
            "0.0.0.0",
            "--port",
            "0",
            "--db",
            str(tmp_path / "a.db"),
            "--no-embeddings",
            "--bridge",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 2
    assert "only on a loopback address" in run.stderr
    assert not (tmp_path / "a.db").exists()


def test_the_bridge_never_opens_the_main_database(tmp_path: Path) -> None:
    from nams_local.server import create_app

    db = tmp_path / "real.db"
    try:
        create_app(db=db, embeddings=False, bridge=str(db))
    except ValueError as exc:
        assert "its own database" in str(exc)
    else:
        raise AssertionError("the bridge was opened over the main database")
