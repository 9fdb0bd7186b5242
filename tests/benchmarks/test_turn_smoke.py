"""The per-turn benchmark runs end to end on a tiny store (so it cannot rot).

In-process, over loopback HTTP (``nams-local serve``), and through the hosted path: a
``HostedBackend`` built from ``MEMORY_API_KEY`` / ``MEMORY_ENDPOINT``, pointed here at a
second local server because hosted NAMS is not reachable from the test machine.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from backends.sqlite import SQLiteBackend
from benchmarks._http import LoopbackServer
from benchmarks.turn import main
from nams_local.embeddings import HashingEmbedder
from nams_local.server import create_app

TINY = [
    "--sizes", "300",
    "--users", "3",
    "--conversations-per-user", "4",
    "--entities", "30",
    "--turns", "20",
    "--per-source-turns", "8",
    "--per-conversation-turns", "8",
    "--pre-embedded-turns", "6",
    "--solo-turns", "5",
    "--http-turns", "6",
    "--warmup", "3",
    "--embedder", "hashing",
    "--extraction", "off",  # the turns' writes add messages only, so counts are exact
    "--quiet",
]  # fmt: skip


def run(tmp_path: Path, *extra: str) -> dict[str, Any]:
    out = tmp_path / "results"
    readme = tmp_path / "README.md"
    assert main([*TINY, *extra, "--results", str(out), "--readme", str(readme)]) == 0
    results: dict[str, Any] = json.loads((out / "turn.json").read_text())
    assert (out / "turn.png").read_bytes().startswith(b"\x89PNG")
    section = readme.read_text()
    assert section.startswith("<!-- bench:turn -->") and "<!-- /bench:turn -->" in section
    assert "One chat turn" in section
    return results


def test_turn_benchmark_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMORY_API_KEY", raising=False)
    results = run(tmp_path)
    (size,) = results["sizes"]
    counts = size["info"]["counts"]
    assert counts["messages"] == 300
    assert counts["entities"] == 30
    assert counts["relationships"] == 60
    assert counts["reasoning_steps"] == 12 * 3

    native = size["series"]["native"]
    per_source = size["series"]["per-source"]
    hidden = size["series"]["per-conversation"]
    pre = size["series"]["pre-embedded"]
    loopback = size["series"]["loopback"]
    assert (native["n"], per_source["n"], hidden["n"], pre["n"], loopback["n"]) == (
        20,
        8,
        8,
        6,
        6,
    )
    assert "MEMORY_API_KEY" in size["skipped_backends"]["hosted"]
    assert "hosted" not in size["series"]
    for series in (native, per_source, hidden, pre, loopback):
        one_call = series in (native, pre)  # recall_turn serves every source
        assert series["retrieve_p50_ms"] > 0 and series["persist_p50_ms"] > 0
        assert series["retrieve_p50_ms"] < series["p50_ms"]
        for figure in ("p50_ms", "p95_ms", "p99_ms", "mean_ms", "max_ms"):
            assert series[figure] > 0, figure
        assert series["failed_calls"] == 0
        assert series["warnings"] == 0
        assert series["empty_turns"] == 0
        # Every source is read (in one call, or each by its own) and most turns get
        # something from each of them.
        for source, row in series["by_source"].items():
            if (source == "turn") == one_call:
                assert row["calls_per_turn"] > 0, source
                assert row["items_per_turn"] > 0 or source == "turn", source
        # The block itself: the relevance gate is calibrated for MiniLM (0.675, or 0.55
        # with a rare shared word), so with the hashing embedder most turns' entity hits
        # stay below it: the long-term source returns items (asserted above) but shows
        # none (nor does the graph source it expands); three sources still show hits.
        with_hits = [s for s, row in series["by_source"].items() if row["hits_per_turn"] > 0]
        assert len(with_hits) >= 3, with_hits

    # One call for the first round and one for both writes natively (the settling
    # between turns makes each turn's figures its own).
    assert native["calls_per_turn_by_method"]["recall_turn"] == 1
    assert native["calls_per_turn_by_method"]["persist_turn"] == 1
    assert "search_entities" not in native["calls_per_turn_by_method"]
    assert native["settle_p50_ms"] > 0
    # Source by source: one cross-session call; 1 + 2·N (N = 3 other conversations) when
    # user_message_search is hidden too.
    by_method = per_source["calls_per_turn_by_method"]
    assert by_method["search_user_messages"] == 1
    assert "list_conversations" not in by_method
    # entities, at most 2 x get_entity (only entities above the relevance floor are
    # expanded), messages, steps, cross-session, then the two writes; a first-person
    # question adds one lookup of the user's own entity (the validity-aware graph source)
    assert 6 <= per_source["calls_per_turn"] <= 9
    assert by_method.get("get_entity", 0) <= 2
    assert by_method["search_entities"] <= 2
    assert by_method["add_message"] == 2 and "persist_turn" not in by_method  # as before
    assert native["http_requests_per_turn"] is None
    # Over HTTP every backend call is one request; the server has user_message_search.
    assert 6 <= loopback["calls_per_turn"] <= 9
    assert loopback["http_requests_per_turn"] == loopback["calls_per_turn"]
    # The loopback server has a backend of its own on the file (as a separate ``serve``):
    # its writer ran the loopback turns' writes (two add_message each) and none of the
    # in-process turns' (58 or more units: 20 + 6 turns' persist_turn, 16 x 2 add_message).
    served, local = size["stores"]["loopback"], size["stores"]["in-process"]
    assert 2 * loopback["n"] <= served["writer_units"] < local["writer_units"]
    assert served["reads"] > 0
    hidden_methods = hidden["calls_per_turn_by_method"]
    assert "search_user_messages" not in hidden_methods
    assert hidden_methods["list_conversations"] == 1
    assert hidden["by_source"]["cross-session"]["calls_per_turn"] == 1 + 2 * 3
    # The query is embedded once per turn (one model run; the one call embeds it once).
    assert native["model_runs_per_turn"] == 1
    assert pre["model_runs_per_turn"] == 1

    solo = size["solo"]
    assert all(row["n"] == 5 and row["p50_ms"] > 0 for row in solo.values())
    assert size["query_cache"]["misses"] >= size["query_cache"]["distinct_queries"]
    assert results["interleaved"] is None  # one size: nothing to interleave


def test_turn_benchmark_interleaves_the_sizes_searches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two sizes: each is measured as before, then their per-conversation searches take
    turns in one phase, and the report gives the p95 ratio with the target's verdict."""
    monkeypatch.delenv("MEMORY_API_KEY", raising=False)
    results = run(
        tmp_path, "--sizes", "200,300", "--backends", "in-process", "--interleaved-searches", "12"
    )
    assert [size["spec"]["messages"] for size in results["sizes"]] == [200, 300]
    found = results["interleaved"]
    assert found["rounds"] == 12 and (found["smallest"], found["largest"]) == (200, 300)
    assert set(found["sizes"]) == {"200", "300"}
    for row in found["sizes"].values():
        assert row["n"] == 12 and row["p95_ms"] >= row["p50_ms"] > 0
    small, large = found["sizes"]["200"]["p95_ms"], found["sizes"]["300"]["p95_ms"]
    assert found["p95_ratio"] == pytest.approx(large / small)
    section = (tmp_path / "README.md").read_text()
    assert "sizes interleaved (12 rounds" in section
    assert f"p95 at 300 messages within 1.3x of 200: {large / small:.2f}x" in section


def test_turn_benchmark_reuses_its_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "turn.db"
    first = run(tmp_path, "--db", str(db))
    assert first["sizes"][0]["database"]["reused"] is False
    assert Path(f"{db}.turn.json").exists()

    second = run(tmp_path, "--db", str(db))
    assert second["sizes"][0]["database"]["reused"] is True
    before, after = first["sizes"][0]["info"]["counts"], second["sizes"][0]["info"]["counts"]
    # the first run's turns wrote into a copy: the second measures the store as built
    assert after == before
    assert second["sizes"][0]["database"]["measured_on_a_copy"] is True
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".turn-")) == []

    with pytest.raises(SystemExit) as refused:  # other settings: refuse, build nothing
        main([*TINY, "--db", str(db), "--seed", "7"])
    assert refused.value.code == 2
    assert "seed" in capsys.readouterr().err

    stray = tmp_path / "stray.db"
    stray.write_bytes(b"")
    with pytest.raises(SystemExit):  # no sidecar: not ours, never measured
        main([*TINY, "--db", str(stray)])


def test_turn_benchmark_hosted_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``hosted`` builds the same workload through ``MEMORY_*`` and measures it there."""
    remote = SQLiteBackend(":memory:", embedder=HashingEmbedder(), extraction="off")
    with LoopbackServer(create_app(remote, api_keys={"remote-key": "bench"})) as server:
        monkeypatch.setenv("MEMORY_API_KEY", "remote-key")
        monkeypatch.setenv("MEMORY_ENDPOINT", server.endpoint)
        monkeypatch.delenv("MEMORY_WORKSPACE_ID", raising=False)
        results = run(tmp_path, "--backends", "hosted")
    (size,) = results["sizes"]
    assert "loopback" not in size["series"]
    assert size["skipped_backends"] == {}
    hosted = size["series"]["hosted"]
    assert hosted["n"] == 6
    assert hosted["failed_calls"] == 0 and hosted["warnings"] == 0
    assert hosted["http_requests_per_turn"] == hosted["calls_per_turn"] >= 8
    remote_counts = remote.info()["counts"]
    # the same workload was built remotely, plus the hosted turns' writes
    assert remote_counts["entities"] == 30 and remote_counts["conversations"] == 12
    assert remote_counts["messages"] >= 300 + 2 * 6


def test_turn_benchmark_refuses_a_too_big_hosted_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_API_KEY", "never-used")
    results = run(tmp_path, "--backends", "hosted", "--hosted-max-messages", "100")
    reason = results["sizes"][0]["skipped_backends"]["hosted"]
    assert "--hosted-max-messages 100" in reason
