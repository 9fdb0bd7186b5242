"""The knowledge-update benchmark runs end to end on a few users and beats its baseline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.updates import generate, main


def test_generated_users_change_their_facts_one_to_three_times() -> None:
    stories = generate(30, seed=1)
    assert {len(s.homes) - 1 for s in stories} <= {1, 2, 3}
    assert {len(s.jobs) - 1 for s in stories} <= {1, 2, 3}
    assert any(s.out_of_order for s in stories)
    assert generate(30, seed=1)[0].said == stories[0].said  # seeded: same stories


def test_updates_benchmark_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    readme = tmp_path / "README.md"
    args = ["--users", "3", "--quiet", "--no-chart", "--results", str(tmp_path)]
    assert main([*args, "--readme", str(readme)]) == 0
    results = json.loads((tmp_path / "updates.json").read_text())
    assert "<!-- bench:updates -->" in readme.read_text()
    engine, baseline = results["engine"], results["baseline"]
    assert engine["current_questions"] == baseline["current_questions"] == 6
    assert engine["superseded_presented_as_current"] < baseline["superseded_presented_as_current"]
    assert engine["past_found_with_interval"] > baseline["past_found_with_interval"] == 0.0
    assert "superseded value presented as current" in capsys.readouterr().out
