"""The peers benchmark runs nams-local, mem0 and Chroma on a tiny set (so it cannot rot).

mem0 and Chroma come with the ``bench`` extra (part of ``dev``); they get the same
model-free embedder here, so nothing is downloaded.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks.peers import main

TINY = [
    "--users", "2",
    "--sessions", "3",
    "--turns", "6",
    "--facts", "3",
    "--embedder", "hashing",
    "--quiet",
]  # fmt: skip


def test_peers_benchmark_runs_every_system(tmp_path: Path) -> None:
    out, readme = tmp_path / "results", tmp_path / "README.md"
    assert main([*TINY, "--results", str(out), "--readme", str(readme)]) == 0
    results = json.loads((out / "peers.json").read_text())
    systems = results["systems"]
    assert list(systems) == ["nams-local", "mem0", "chroma"]
    for name, s in systems.items():
        assert "skipped" not in s, (name, s)
        assert s["messages"] == 2 * 3 * 6
        assert s["searches"] == 6
        assert 0 < s["search_p50_ms"] <= s["search_p95_ms"]
        at = s["recall"]
        assert 0 <= at["@1"] <= at["@5"] <= at["@10"] <= 1
        assert at["@10"] > 0, name  # every system finds evidence, so ids were mapped right
    assert set(results["verdicts"]) == {"mem0", "chroma"}
    assert (out / "peers.png").read_bytes().startswith(b"\x89PNG")
    assert "<!-- bench:peers -->" in readme.read_text()


def test_an_unknown_system_is_refused(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "peers", "--systems", "nams-local,letta"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        timeout=60,
    )
    assert proc.returncode == 2
    assert "letta" in proc.stderr


def test_nams_local_bench_runs_a_benchmark(tmp_path: Path) -> None:
    """``nams-local bench NAME ...`` is ``python -m benchmarks NAME ...``."""
    from nams_local.cli import main as cli

    out = tmp_path / "results"
    code = cli(
        ["bench", "peers", *TINY, "--systems", "nams-local", "--results", str(out), "--no-readme"]
    )
    assert code == 0
    assert list(json.loads((out / "peers.json").read_text())["systems"]) == ["nams-local"]
    assert cli(["bench", "no-such-benchmark"]) == 2
