"""The loopback benchmark runs end to end on a tiny store (so it cannot rot)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.loopback import main


def test_loopback_benchmark_runs(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    code = main(
        [
            "--users", "3",
            "--messages", "120",
            "--entities", "12",
            "--turns", "6",
            "--warmup", "1",
            "--embedder", "hashing",
            "--quiet",
            "--json", str(out),
        ]
    )  # fmt: skip
    assert code == 0
    paths = json.loads(out.read_text())["paths"]
    assert set(paths) == {"in-process", "loopback", "asgi"}
    for name in ("loopback", "asgi"):
        assert paths[name]["n"] == 6
        assert paths[name]["http_requests_per_turn"] >= 4  # one per source at least
        assert paths[name]["p50_ratio"] > 0
    assert paths["in-process"]["p50_ms"] > 0
