"""The export benchmark builds a store, exports it in a child process and reports time,
records per second and the child's peak memory; ``--db`` reuses a store."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.export import main


def test_export_benchmark_runs(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    db = tmp_path / "store.db"
    args = ["--messages", "250", "--quiet", "--no-chart", "--results", str(tmp_path)]
    assert main([*args, "--db", str(db), "--import", "--readme", str(readme)]) == 0
    results = json.loads((tmp_path / "export.json").read_text())
    # 250 messages in conversations of 100: 3 conversations.
    assert results["export"]["records"] == 253
    assert results["store"]["built"] is True
    assert results["export"]["peak_kb"] > 10_000  # a Python process with the engine loaded
    assert results["import"]["records_per_second"] > 0
    assert "<!-- bench:export -->" in readme.read_text()
    # The second run finds the store and exports it as it is.
    assert main([*args, "--db", str(db), "--no-readme"]) == 0
    again = json.loads((tmp_path / "export.json").read_text())
    assert again["store"]["built"] is False
    assert again["export"]["records"] == 253
