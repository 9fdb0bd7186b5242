"""The ingest/search benchmark runs end to end on a tiny workload (so it cannot rot)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.ingest_search import main


def test_ingest_search_benchmark_runs(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    code = main(
        [
            "--users", "3",
            "--conversations-per-user", "2",
            "--messages", "200",
            "--entities", "20",
            "--queries", "10",
            "--warmup", "2",
            "--embedder", "hashing",
            "--quiet",
            "--json", str(out),
        ]
    )  # fmt: skip
    assert code == 0
    results = json.loads(out.read_text())

    ingest = results["ingest"]
    assert ingest["messages"]["count"] == 200
    assert ingest["messages"]["per_second"] > 0
    assert ingest["raw_embed"]["per_second"] > 0
    assert ingest["entities"]["per_second"] > 0
    assert results["workload"]["entities"] == 20
    assert results["engine"]["info"]["counts"]["messages"] == 200

    search = results["search"]
    expected = {
        "messages.default": "hybrid",
        "entities.default": "hybrid",
        "messages.text": "text",
        "messages.vector": "vector",
        "entities.text": "text",
        "entities.vector": "vector",
        "embed_query": "embed_query",
    }
    assert {key: s["search_type"] for key, s in search.items()} == expected
    for key, summary in search.items():
        assert summary["n"] == 10, key
        for figure in ("p50_ms", "p95_ms", "mean_ms"):
            assert summary[figure] > 0, (key, figure)
        if key != "embed_query":
            assert summary["mean_hits"] > 0, key
    assert results["search_notes"]["query_cache_hits_during_measurement"] == 0


def test_ingest_search_benchmark_text_only(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    args = ["--users", "2", "--messages", "40", "--entities", "5", "--queries", "3"]
    assert main([*args, "--no-embeddings", "--memory", "--quiet", "--json", str(out)]) == 0
    search = json.loads(out.read_text())["search"]
    assert set(search) == {"messages.default", "entities.default"}
    assert all(s["search_type"] == "text" and s["p50_ms"] > 0 for s in search.values())
