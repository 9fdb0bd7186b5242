"""The extraction-quality benchmark runs end to end (so it cannot rot) and reports sane figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.extraction_quality import main


def test_extraction_quality_benchmark_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    readme = tmp_path / "README.md"
    args = ["--repeat", "1", "--quiet", "--errors", "--results", str(tmp_path)]
    assert main([*args, "--readme", str(readme)]) == 0
    printed = capsys.readouterr().out
    results = json.loads((tmp_path / "extraction_quality.json").read_text())
    assert "<!-- bench:extraction_quality -->" in readme.read_text()

    corpus = results["corpus"]
    assert corpus["messages"] >= 60
    assert set(results["quality"]) == {"all", *corpus["splits"]}
    everything = results["quality"]["all"]
    assert everything["messages"] == corpus["messages"]
    for kind in ("entities", "relationships"):
        score = everything[kind]
        assert 0.0 < score["precision"] <= 1.0 and 0.0 < score["recall"] <= 1.0
        assert score["tp"] + score["fn"] > 0
    assert {"person", "organization", "location", "tool", "event"} <= set(
        everything["entity_types"]
    )
    assert "WORKS_AT" in everything["relationship_types"]

    speed = results["speed"]
    assert speed["messages"] == corpus["messages"]
    assert speed["messages_per_second"] > 0 and speed["p50_us"] > 0
    assert "Quality by split" in printed and "messages/s" in printed
    assert "Misses and extras" in printed
