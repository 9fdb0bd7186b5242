"""The ``nams-local`` command, run as a user would: a real process on a real database."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nams_local.cli import main


def _run(home: Path, *args: str, env_db: str | None = None) -> subprocess.CompletedProcess[str]:
    """``nams-local <args>`` with a home of its own (parallel tests never share one)."""
    env = {"PATH": "/usr/bin:/bin", "NAMS_LOCAL_DB": env_db or ":memory:", "HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "nams_local.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_demo_runs_end_to_end_and_leaves_data_that_info_counts(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    demo = _run(tmp_path, "demo", "--db", str(db))
    assert demo.returncode == 0, demo.stderr
    out = demo.stdout
    assert "-> vector" in out and "-> text" in out and "-> hybrid" in out
    assert "(Alex)-[WORKS_AT]->(TechCorp)" in out
    assert "(Alex)-[SIBLING_OF]<-(Priya)" in out
    assert "add_entity('neovim') reused the extracted 'Neovim': True" in out
    assert "[graph] (Sam)-[LIVES_IN]->(Pune)" in out
    prompt = out.split("The prompt the model received in session 2:")[1]
    assert "| Relevant long-term memory about this user" in prompt
    assert "[cross-session] I take my coffee with oat milk." in prompt
    assert "[long-term] Alex" not in prompt  # the chat demo has a workspace of its own
    assert "clean text only: True" in out
    assert "User is from Delhi" in out.split("mode=vector")[1].splitlines()[1]
    info = _run(tmp_path, "info", "--json", env_db=str(db))
    assert info.returncode == 0, info.stderr
    facts = json.loads(info.stdout)
    assert facts["backend"] == "sqlite"
    assert facts["path"] == str(db)
    assert facts["vector_index"] == "sqlite-vec"
    assert facts["counts"]["workspaces"] == 2
    assert facts["counts"]["conversations"] == 4
    assert facts["counts"]["messages"] == 8 + 6
    # Extracted from the messages: Alex, TechCorp, Delhi, Bangalore, Python, Neovim, Nandi
    # Hills, Priya (engine demo) and Sam, Pune (chat demo); six edges of Alex's, Sam's one.
    assert facts["counts"]["entities"] == 10
    assert facts["counts"]["relationships"] == 7


def test_demo_text_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--no-embeddings", "--db", str(tmp_path / "t.db")]) == 0
    out = capsys.readouterr().out
    assert "Vector search: False" in out
    assert "-> text" in out
    assert "-> vector" not in out and "-> hybrid" not in out


def test_info_reports_text_only_store(tmp_path: Path) -> None:
    info = _run(tmp_path, "info", "--no-embeddings", "--db", str(tmp_path / "x.db"))
    assert info.returncode == 0, info.stderr
    assert "off (text search only)" in info.stdout
    assert "sqlean" in info.stdout
