"""The Cypher latency benchmark runs end to end on a tiny graph (so it cannot rot)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.cypher_latency import QUERIES, main


def test_cypher_latency_benchmark_runs(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    small = ["--entities", "40", "--conversations", "3", "--messages-per-conversation", "2"]
    code = main([*small, "--repeats", "2", "--quiet", "--json", str(out)])
    assert code == 0
    results = json.loads(out.read_text())
    assert results["workload"]["entities"] == 40
    assert results["workload"]["relationships"] > 0
    assert results["load_graph"]["p50_ms"] > 0 and results["build_graph"]["p50_ms"] > 0
    assert results["workload"]["messages"] > 0
    assert set(results["queries"]) == {name for name, _, _ in QUERIES}
    # Every shape answers something on the seeded graph, so each is really exercised.
    assert all(q["rows"] > 0 and q["p50_ms"] > 0 for q in results["queries"].values())
