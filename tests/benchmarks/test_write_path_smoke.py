"""The write-path benchmark runs end to end on a tiny workload (so it cannot rot)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.write_path import main


def test_write_path_benchmark_runs(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# b\n\n<!-- bench:write_path -->\nold\n<!-- /bench:write_path -->\n")
    code = main(
        [
            "--messages", "24",
            "--concurrency", "1,4",
            "--hashing",
            "--quiet",
            "--no-chart",
            "--results", str(tmp_path),
            "--readme", str(readme),
        ]
    )  # fmt: skip
    assert code == 0
    results = json.loads((tmp_path / "write_path.json").read_text())
    phases = results["phases"]
    assert [p["writers"] for p in phases] == [1, 4]
    for phase in phases:
        assert phase["messages"] == 24
        assert phase["messages_per_second"] > 0
        assert phase["raw_embedder_texts_per_second"] > 0
        assert phase["commits"] >= 1
    assert "old" not in readme.read_text()
    assert "msg/s (acked+embedded)" in readme.read_text()
