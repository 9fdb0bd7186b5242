"""The bridge benchmark runs end to end on one scenario (so it cannot rot)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.bridge import main


def test_bridge_benchmark_runs(tmp_path: Path) -> None:
    out = tmp_path / "bridge.json"
    args = ["--scenarios", "1", "--client-samples", "1", "--quiet", "--json", str(out)]
    assert main(args) == 0
    results = json.loads(out.read_text())
    assert results["scenarios"] == 1 and results["calls"] > 30
    assert 0 < results["call_ms"]["p50"] <= results["call_ms"]["p95"]
    assert results["estimated_tck_run_s"] > 0
