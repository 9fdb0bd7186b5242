"""The HTTP load benchmarks run end to end against a real ``nams-local serve`` (so they cannot rot).

Each test starts the real server in a subprocess through the benchmark itself, drives it
for a couple of seconds from the benchmark's own load generator processes, and checks the
report: requests were made and answered, the writes landed, the figures hang together, the
harness ceiling was measured, and the server was stopped.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from benchmarks import ingest_http, load
from benchmarks._loadgen import NORMAL_MIX

NORMAL_OPS = [name for name, _ in NORMAL_MIX]


def _outputs(tmp_path: Path) -> list[str]:
    return [
        "--quiet",
        "--results",
        str(tmp_path / "results"),
        "--readme",
        str(tmp_path / "README.md"),
    ]


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _check_block(block: dict[str, Any]) -> None:
    assert block["requests"] == block["ok"] + block["non_2xx"] + block["errors"]
    assert sum(block["statuses"].values()) == block["requests"]
    assert 0 < block["p50_ms"] <= block["p95_ms"] <= block["p99_ms"] <= block["max_ms"]


def test_load_smoke_makes_and_answers_requests(tmp_path: Path) -> None:
    out = tmp_path / "load.json"
    code = load.main(["--smoke", "--json", str(out), *_outputs(tmp_path)])
    assert code == 0
    results = json.loads(out.read_text())
    assert results == json.loads((tmp_path / "results" / "load_no_embeddings.json").read_text())
    assert results["settings"]["no_embeddings"] and not results["settings"]["adversarial"]
    figures = results["load"]
    overall = figures["overall"]
    _check_block(overall)
    # each of the 8 clients issued at least one request, and the server answered in time
    assert overall["requests"] >= 8, overall
    assert overall["non_2xx"] == 0 and overall["errors"] == 0, figures.get("error_kinds")
    assert overall["answered_in_window"] > 0
    assert overall["requests_per_second"] == overall["answered_in_window"] / 3
    ops = figures["operations"]
    assert set(ops) <= set(NORMAL_OPS)
    if overall["requests"] >= 50:  # 40 % each: both are all but certain to appear
        assert {"add_message", "search"} <= set(ops)
    for block in ops.values():
        _check_block(block)
    assert sum(b["requests"] for b in ops.values()) == overall["requests"]
    # every acknowledged add is in its conversation afterwards, beside the seeded messages
    seed = results["seed"]
    found = results["messages_found"]
    assert not found["capped_at_list_limit"]
    added = ops["add_message"]["ok"] if "add_message" in ops else 0
    assert found["messages"] == seed["tenants"] * seed["messages_per_tenant"] + added
    # the harness measured its own ceiling and cost, and the server's
    ceiling = results["ceiling"]
    assert ceiling["requests_per_second"] > 0 and ceiling["non_2xx"] == 0
    assert ceiling["client"]["cpu_us_per_request"] > 0 and ceiling["one_process_max_rps"] > 0
    assert figures["client"]["cpu_seconds"] > 0 and figures["server_cpu_seconds"] > 0
    per_request = figures["server_cpu_seconds"] / overall["requests"] * 1000
    assert figures["server_cpu_ms_per_request"] == per_request
    assert figures["workers_cpu_seconds"] is not None and figures["workers_cpu_seconds"] >= 0
    server = results["server"]
    assert server["exit_status"] == 0 and _gone(server["pid"]) and server["killed_for"] is None
    assert results["verdict"]["targets"] == {"requests_per_second": load.TARGET_RPS_NO_EMBEDDINGS}
    readme = (tmp_path / "README.md").read_text()
    assert "<!-- bench:load_no_embeddings -->" in readme and "harness ceiling" in readme
    assert "server CPU per request" in readme
    assert (tmp_path / "results" / "load_no_embeddings.png").read_bytes().startswith(b"\x89PNG")


def test_load_adversarial_smoke_reports_both_sides(tmp_path: Path) -> None:
    code = load.main(
        ["--smoke", "--adversarial", "--seconds", "2", "--ceiling-seconds", "0",
         "--no-chart", *_outputs(tmp_path)]
    )  # fmt: skip
    assert code == 0
    results = json.loads((tmp_path / "results" / "load_adversarial_no_embeddings.json").read_text())
    assert results["ceiling"] is None
    assert results["settings"]["measured_tenants"] == results["settings"]["tenants"] - 1
    assert results["seed"]["hostile_entities"] >= 30
    figures = results["load"]
    _check_block(figures["overall"])
    assert set(figures["operations"]) <= set(NORMAL_OPS)
    hostile = figures["hostile"]
    _check_block(hostile["overall"])
    assert {"cypher_heavy", "bulk_max", "search_max"} <= set(hostile["operations"])
    assert not set(hostile["operations"]) & set(NORMAL_OPS)
    assert "others_p95_met" in results["verdict"]
    # the same clients alone just before, on the same server: the floor of their p95
    baseline = results["baseline"]
    assert baseline["seconds"] == 1.0 and baseline["requests"] >= 8
    assert baseline["non_2xx"] == 0 and baseline["errors"] == 0
    assert 0 < baseline["p50_ms"] <= baseline["p95_ms"] <= baseline["p99_ms"]
    assert baseline["requests_per_second"] > 0
    assert _gone(results["server"]["pid"])
    readme = (tmp_path / "README.md").read_text()
    assert "hostile tenant" in readme and "the same clients with no hostile tenant" in readme


def test_ingest_http_smoke_acks_and_extracts(tmp_path: Path) -> None:
    code = ingest_http.main(["--smoke", "--no-chart", *_outputs(tmp_path)])
    assert code == 0
    results = json.loads((tmp_path / "results" / "ingest_http.json").read_text())
    phases = results["phases"]
    assert [p["bulk"] for p in phases] == [10, 20]
    for phase in phases:
        assert phase["statuses"] == {"201": 40}
        assert phase["acked_messages"] == 40 and phase["unfinished_after_timeout"] == 0
        assert 0 < phase["acked_seconds"] <= phase["indexed_seconds"]
        assert phase["indexed_seconds"] <= phase["extracted_seconds"]
        assert phase["raw_per_second"] > 0 and phase["acked_over_raw"] > 0
    # No vector index under --no-embeddings: acked is the figure the verdict uses.
    assert results["verdict"]["measure"] == "acked_over_raw"
    assert "<!-- bench:ingest_http -->" in (tmp_path / "README.md").read_text()
