"""The scale benchmark grows a tiny store in stages end to end (so it cannot rot)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.scale import main


def test_scale_benchmark_grows_and_measures_each_stage(tmp_path: Path) -> None:
    out, readme = tmp_path / "results", tmp_path / "README.md"
    code = main(
        [
            "--sizes", "200,600",
            "--users", "5",
            "--messages-per-conversation", "10",
            "--entities-per-message", "0.05",
            "--queries", "8",
            "--warmup", "1",
            "--raw-every", "2",
            "--embedder", "hashing",
            "--extraction", "off",  # so the entity counts are the workload's alone
            "--raw-bulk", "50",
            "--quiet",
            "--results", str(out),
            "--readme", str(readme),
        ]
    )  # fmt: skip
    assert code == 0
    results = json.loads((out / "scale.json").read_text())
    assert results["complete"] and results["settings"]["extraction"] == "off"
    first, second = results["stages"]
    assert (first["counts"]["messages"], second["counts"]["messages"]) == (200, 600)
    # new conversations of a fixed size: 20 then 40 more, over the same 5 users
    assert (first["counts"]["conversations"], second["counts"]["conversations"]) == (20, 60)
    # 10 then 20 more entities; a later stage may name one an earlier stage did (merged)
    assert first["counts"]["entities"] == 10
    assert 25 <= second["counts"]["entities"] <= 30
    for stage in (first, second):
        ingest = stage["ingest"]
        assert ingest["ingest_per_second"] > 0 and ingest["raw_embed_per_second"] > 0
        assert ingest["sampled_messages"] > 0 and ingest["ingest_over_raw"] > 0
        assert ingest["raw_one_call_texts"] == 50 and ingest["ingest_over_raw_one_call"] > 0
        assert stage["db_bytes"] > 0 and stage["rss_bytes"] > 0
        for kind in ("conversation", "user", "entities"):
            search = stage["search"][kind]
            assert search["n"] == 8 and 0 < search["p50_ms"] <= search["p95_ms"]
            assert search["mean_hits"] > 0
    assert second["db_bytes"] > first["db_bytes"]
    growth = results["verdict"]["p95_growth_first_to_last"]
    assert set(growth) == {"conversation", "user", "entities"}
    assert (out / "scale.png").read_bytes().startswith(b"\x89PNG")
    assert "<!-- bench:scale -->" in readme.read_text()
