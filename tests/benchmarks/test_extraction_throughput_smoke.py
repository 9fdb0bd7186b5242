"""The extraction-throughput benchmark runs (tiny, hashing embedder) and reports each phase."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.extraction_throughput import main


def test_extraction_throughput_benchmark_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    readme = tmp_path / "README.md"
    code = main(
        [
            "--messages", "120", "--single", "12", "--users", "3", "--hashing", "--quiet",
            "--results", str(tmp_path), "--readme", str(readme), "--no-chart",
        ]
    )  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    assert "bulk ingest with extraction =" in out
    rows = {
        r["label"]: r
        for r in json.loads((tmp_path / "extraction_throughput.json").read_text())["rows"]
    }
    assert rows["bulk, extraction sync"]["messages"] == 120
    assert rows["batch 1, extraction sync"]["messages"] == 12
    assert rows["bulk, extraction off"]["entities"] == 0
    assert rows["bulk, extraction sync"]["entities"] > 0  # extraction really ran
    assert "<!-- bench:extraction_throughput -->" in readme.read_text()
