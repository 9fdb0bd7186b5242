"""The parent side of the load generator: its processes started, synchronised and collected.

``run_generators`` spreads the virtual clients over a few ``python -m benchmarks._loadgen``
processes, hands each its plan on stdin, waits until every one has connected ("ready"),
gives them all the same wall-clock start, and gathers their samples, errors and CPU
seconds. Each process is killed by its PID when it outlives the window by more than the
request timeout plus a minute, and all of them are stopped on the way out, whatever happens
(an error, ``KeyboardInterrupt``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ._serve import REPO_ROOT, child_environment

__all__ = ["run_generators"]

#: Seconds a generator may take to start and connect before the run is abandoned.
START_BUDGET = 60.0


def run_generators(
    base_plan: dict[str, Any],
    clients: list[dict[str, Any]],
    *,
    processes: int,
    logs: Path,
) -> dict[str, Any]:
    """Run ``clients`` (``_loadgen.Client`` fields) over at most ``processes`` generator
    processes for one window of ``base_plan["seconds"]``; the pooled results."""
    n_proc = max(1, min(processes, len(clients)))
    seconds, timeout = float(base_plan["seconds"]), float(base_plan["timeout"])
    logs.mkdir(parents=True, exist_ok=True)
    procs: list[subprocess.Popen[str]] = []
    pool = ThreadPoolExecutor(max_workers=n_proc)
    try:
        for k in range(n_proc):
            with (logs / f"loadgen-{k}.log").open("w") as err:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "benchmarks._loadgen"],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=err,
                    text=True,
                    env=child_environment(),
                    cwd=str(REPO_ROOT),
                )
            procs.append(proc)
            plan = dict(base_plan, clients=clients[k::n_proc])
            if "messages" in base_plan:
                # Each process adds its own share of the distinct texts (no two adds alike).
                plan["messages"] = base_plan["messages"][k::n_proc]
            _send(proc, json.dumps(plan))
        readies = [pool.submit(_readline, p) for p in procs]
        for k, ready in enumerate(readies):
            if ready.result(timeout=START_BUDGET + timeout).strip() != "ready":
                raise RuntimeError(f"load generator {k} did not start: {_log(logs, k)}")
        start_at = time.time() + 0.2
        for p in procs:
            _send(p, repr(start_at), close=True)
        outputs = [pool.submit(_read_rest, p) for p in procs]
        parsed = []
        for k, out in enumerate(outputs):
            text = out.result(timeout=seconds + timeout + 60.0)
            if procs[k].wait(timeout=10) != 0 or not text.strip():
                raise RuntimeError(f"load generator {k} failed: {_log(logs, k)}")
            parsed.append(json.loads(text))
    finally:
        # Kill first: a reader thread blocked on a live child's stdout ends when it dies.
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=10)
        pool.shutdown(wait=True)
        for p in procs:
            for stream in (p.stdin, p.stdout):
                if stream is not None and not stream.closed:
                    stream.close()
    errors: Counter[str] = Counter()
    for out in parsed:
        errors.update(out["errors"])
    return {
        "samples": [s for out in parsed for s in out["samples"]],
        "errors": dict(errors),
        "client_cpu_seconds": [float(out["cpu_seconds"]) for out in parsed],
        "processes": n_proc,
        "seconds": seconds,
    }


def _send(proc: subprocess.Popen[str], line: str, *, close: bool = False) -> None:
    assert proc.stdin is not None
    proc.stdin.write(line + "\n")
    proc.stdin.flush()
    if close:
        proc.stdin.close()


def _readline(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    return proc.stdout.readline()


def _read_rest(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    return proc.stdout.read()


def _log(logs: Path, k: int) -> str:
    try:
        return (logs / f"loadgen-{k}.log").read_text()[-2000:]
    except OSError:
        return ""
