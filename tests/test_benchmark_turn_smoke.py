"""The per-turn retrieval benchmark runs end to end on a tiny store (so it cannot rot)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.turn import main

TINY = [
    "--sizes", "300",
    "--users", "3",
    "--conversations-per-user", "4",
    "--entities", "30",
    "--turns", "20",
    "--per-conversation-turns", "8",
    "--pre-embedded-turns", "6",
    "--solo-turns", "5",
    "--warmup", "3",
    "--embedder", "hashing",
    "--quiet",
]  # fmt: skip


def run(tmp_path: Path, *extra: str) -> dict[str, Any]:
    out = tmp_path / "r.json"
    assert main([*TINY, *extra, "--json", str(out)]) == 0
    results: dict[str, Any] = json.loads(out.read_text())
    return results


def test_turn_benchmark_runs(tmp_path: Path) -> None:
    results = run(tmp_path)
    (size,) = results["sizes"]
    counts = size["info"]["counts"]
    assert counts["messages"] == 300
    assert counts["entities"] == 30
    assert counts["relationships"] == 60
    assert counts["reasoning_steps"] == 12 * 3

    native = size["series"]["native"]
    hidden = size["series"]["per-conversation"]
    pre = size["series"]["pre-embedded"]
    assert (native["n"], hidden["n"], pre["n"]) == (20, 8, 6)
    for series in (native, hidden, pre):
        for figure in ("p50_ms", "p95_ms", "p99_ms", "mean_ms", "max_ms"):
            assert series[figure] > 0, figure
        assert series["failed_calls"] == 0
        assert series["warnings"] == 0
        assert series["empty_turns"] == 0
        # Every source is read and most turns get something from each of them.
        for source, row in series["by_source"].items():
            assert row["calls_per_turn"] >= 1, source
            assert row["items_per_turn"] > 0, source
        with_hits = [s for s, row in series["by_source"].items() if row["hits_per_turn"] > 0]
        assert len(with_hits) >= 4, with_hits

    # One cross-session call natively; 1 + 2·N (N = 3 other conversations) when hidden.
    by_method = native["calls_per_turn_by_method"]
    assert by_method["search_user_messages"] == 1
    assert "list_conversations" not in by_method
    assert native["calls_per_turn"] == 6  # entities, 2 x get_entity, messages, steps, cross
    hidden_methods = hidden["calls_per_turn_by_method"]
    assert "search_user_messages" not in hidden_methods
    assert hidden_methods["list_conversations"] == 1
    assert hidden["by_source"]["cross-session"]["calls_per_turn"] == 1 + 2 * 3
    # Embedded once up front, the query is a cache hit for all three searches.
    assert pre["embed_query_calls_per_turn"] == 4
    assert pre["model_runs_per_turn"] == 1

    solo = size["solo"]
    assert all(row["n"] == 5 and row["p50_ms"] > 0 for row in solo.values())
    assert size["query_cache"]["misses"] >= size["query_cache"]["distinct_queries"]


def test_turn_benchmark_reuses_its_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "turn.db"
    first = run(tmp_path, "--db", str(db))
    assert first["sizes"][0]["database"]["reused"] is False
    assert Path(f"{db}.turn.json").exists()

    second = run(tmp_path, "--db", str(db))
    assert second["sizes"][0]["database"]["reused"] is True
    assert second["sizes"][0]["info"]["counts"] == first["sizes"][0]["info"]["counts"]

    with pytest.raises(SystemExit) as refused:  # other settings: refuse, build nothing
        main([*TINY, "--db", str(db), "--seed", "7"])
    assert refused.value.code == 2
    assert "seed" in capsys.readouterr().err

    stray = tmp_path / "stray.db"
    stray.write_bytes(b"")
    with pytest.raises(SystemExit):  # no sidecar: not ours, never measured
        main([*TINY, "--db", str(stray)])
