"""Figures of a load run: throughput, latency percentiles and status counts from samples.

A sample is ``[op, status, start_s, latency_ms, client]`` as ``benchmarks._loadgen``
records it (``op`` indexes ``OPS``; ``status`` is the HTTP status, ``TIMED_OUT`` when the
client gave up, ``FAILED`` when the connection failed). Pure functions, so the report's
arithmetic can be checked apart from any server.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from ._common import percentile
from ._loadgen import FAILED, NORMAL_MIX, OPS, TIMED_OUT

__all__ = [
    "baseline_figures",
    "ceiling_figures",
    "client_cost",
    "load_figures",
    "server_cost",
    "summarize",
]

NORMAL_OPS = tuple(name for name, _ in NORMAL_MIX)


def _latency(ms: list[float]) -> dict[str, float]:
    return {
        "p50_ms": percentile(ms, 50),
        "p95_ms": percentile(ms, 95),
        "p99_ms": percentile(ms, 99),
        "max_ms": max(ms, default=0.0),
    }


def _status_name(status: int) -> str:
    if status == TIMED_OUT:
        return "timeout"
    if status == FAILED:
        return "error"
    return str(status)


def summarize(samples: Sequence[Sequence[float]], seconds: float) -> dict[str, Any]:
    """Throughput, latency and status counts of ``samples`` (``[op, status, start_s,
    latency_ms, client]``), overall and per operation.

    requests/s counts the requests answered (any status) by the end of the window. The
    latencies are of the requests issued in it that were answered or timed out (in-flight
    ones ran to their end; a timeout counts as its timeout, a lower bound); a failed
    connection has no latency worth the name — refused in a millisecond by a dead server,
    it would make the percentiles look good — so it only counts as an error.
    """
    by_op: dict[str, list[Sequence[float]]] = {}
    for s in samples:
        by_op.setdefault(OPS[int(s[0])], []).append(s)

    def block(rows: Sequence[Sequence[float]]) -> dict[str, Any]:
        statuses = Counter(_status_name(int(r[1])) for r in rows)
        http = [r for r in rows if r[1] > 0]
        answered = sum(1 for r in http if r[2] + r[3] / 1000.0 <= seconds)
        ok = sum(1 for r in http if 200 <= r[1] < 300)
        return {
            "requests": len(rows),
            "answered_in_window": answered,
            "ok": ok,
            "non_2xx": len(http) - ok,
            "errors": len(rows) - len(http),
            "timeouts": statuses.get("timeout", 0),
            "statuses": dict(sorted(statuses.items())),
            "requests_per_second": answered / seconds if seconds else 0.0,
            **_latency([float(r[3]) for r in rows if r[1] != FAILED]),
        }

    return {
        "overall": block(samples),
        "operations": {
            op: block(rows) for op, rows in sorted(by_op.items(), key=lambda kv: OPS.index(kv[0]))
        },
    }


def client_cost(run: dict[str, Any], requests: int) -> dict[str, Any]:
    cpu = sum(run["client_cpu_seconds"])
    seconds = run["seconds"]
    return {
        "processes": run["processes"],
        "cpu_seconds": cpu,
        "cores_used": cpu / seconds if seconds else 0.0,
        "cpu_us_per_request": cpu / requests * 1e6 if requests else None,
    }


def ceiling_figures(run: dict[str, Any]) -> dict[str, Any]:
    """What the harness pushed against ``/healthz``, and its own CPU per request there."""
    figures = summarize(run["samples"], run["seconds"])["overall"]
    cost = client_cost(run, figures["requests"])
    per_request = cost["cpu_us_per_request"]
    return {
        "requests_per_second": figures["requests_per_second"],
        "p50_ms": figures["p50_ms"],
        "non_2xx": figures["non_2xx"],
        "errors": figures["errors"],
        "client": cost,
        # What one generator process could push with a whole core to itself.
        "one_process_max_rps": 1e6 / per_request if per_request else None,
    }


def baseline_figures(
    run: dict[str, Any], clients: list[dict[str, Any]], server_cpu: float | None
) -> dict[str, Any]:
    """The other tenants alone (``--baseline-seconds``): their overall figures."""
    figures = load_figures(run, clients, server_cpu)
    overall = figures["overall"]
    keys = ("requests", "requests_per_second", "p50_ms", "p95_ms", "p99_ms", "non_2xx", "errors")
    return {
        "seconds": run["seconds"],
        **{key: overall[key] for key in keys},
        "server_cpu_ms_per_request": figures.get("server_cpu_ms_per_request"),
    }


def _roles(clients: list[dict[str, Any]]) -> dict[int, str]:
    return {int(c["index"]): str(c["role"]) for c in clients}


def server_cost(
    server_cpu: float | None, workers_cpu: float | None, requests: int, seconds: float
) -> dict[str, Any]:
    """The server's CPU in the window, in all and per request: its own process, and its
    worker processes (Cypher) beside it. CPU per request is the steadiest figure a busy
    machine gives: requests/s moves with whatever else runs, the CPU a request costs
    hardly does."""

    def per_request(cpu: float | None) -> float | None:
        return cpu / requests * 1000 if cpu is not None and requests else None

    return {
        "server_cpu_seconds": server_cpu,
        "server_cores_used": server_cpu / seconds if server_cpu is not None and seconds else None,
        "server_cpu_ms_per_request": per_request(server_cpu),
        "workers_cpu_seconds": workers_cpu,
        "workers_cpu_ms_per_request": per_request(workers_cpu),
    }


def load_figures(
    run: dict[str, Any],
    clients: list[dict[str, Any]],
    server_cpu: float | None,
    workers_cpu: float | None = None,
) -> dict[str, Any]:
    roles = _roles(clients)
    normal = [s for s in run["samples"] if roles[int(s[4])] == "normal"]
    hostile = [s for s in run["samples"] if roles[int(s[4])] != "normal"]
    figures = summarize(normal, run["seconds"])
    errors = run["errors"]
    figures["error_kinds"] = {k: v for k, v in errors.items() if k.split(":")[0] in NORMAL_OPS}
    figures["client"] = client_cost(run, len(run["samples"]))
    figures.update(server_cost(server_cpu, workers_cpu, len(run["samples"]), run["seconds"]))
    if hostile:
        h = summarize(hostile, run["seconds"])
        h["error_kinds"] = {k: v for k, v in errors.items() if k.split(":")[0] not in NORMAL_OPS}
        figures["hostile"] = h
    return figures
