"""The TCK bridge under a TCK-shaped load: how long a conformance run takes against nams-local.

``nams-local serve --bridge`` (the real app under uvicorn on loopback) answers scenarios
shaped like the TCK's: ``clear_all_data``, then a strictly sequential mix of Bronze, Silver,
Gold and Platinum calls. Calls go over one kept-alive connection, so the figures are the
server's round trip; the TCK's client instead builds a new ``httpx.AsyncClient`` per call,
whose cost (mostly loading the TLS context, even for plain HTTP) is measured on its own and
added to the estimate of a 189-scenario run (the contract's reference server: about 45 s).

    python -m benchmarks bridge [--scenarios 40] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

import httpx

from backends.sqlite import SQLiteBackend
from nams_local.server import create_app

from ._common import add_output_options, percentile, positive, say
from ._http import LoopbackServer
from ._report import machine

__all__ = ["main"]

#: Scenarios in the TCK (v1): the extrapolation target.
TCK_SCENARIOS = 189


class Caller:
    """Posts bridge calls over one connection and records each call's latency."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.samples: dict[str, list[float]] = {}

    async def __call__(self, method: str, **body: Any) -> Any:
        started = time.perf_counter()
        response = await self.client.post(f"/{method}", json=body)
        self.samples.setdefault(method, []).append(time.perf_counter() - started)
        if response.status_code >= 400:
            raise RuntimeError(f"{method}: {response.status_code} {response.text}")
        return response.json() if response.content else None


async def scenario(call: Caller, index: int) -> None:
    """One TCK-shaped scenario: about 30 calls across the four tiers."""
    await call("clear_all_data")
    session = f"session-{index}"
    for i in range(8):
        await call("add_message", session_id=session, role="user", content=f"Python note {i}")
    await call("get_conversation", session_id=session)
    await call("search_messages", query="Python note", limit=10, threshold=0.0)
    await call("list_sessions", limit=100)
    alice = await call("add_entity", name="Alice Johnson", entity_type="PERSON")
    acme = await call("add_entity", name="Acme Corp", entity_type="ORGANIZATION")
    await call(
        "add_relationship", source_id=alice["id"], target_id=acme["id"], relationship_type="WORKS"
    )
    await call("get_related_entities", entity_id=alice["id"], depth=1)
    await call("search_entities", query="Alice Johnson", limit=10)
    await call("add_preference", category="language", preference="Prefers Python")
    await call("search_preferences", query="Python", limit=10)
    trace = await call("start_trace", session_id=session, task="Find Alice's employer")
    step = await call("add_step", trace_id=trace["id"], thought="look it up")
    await call("record_tool_call", step_id=step["id"], tool_name="search", arguments={"q": 1})
    await call("complete_trace", trace_id=trace["id"], outcome="Acme", success=True)
    await call("get_trace_with_steps", trace_id=trace["id"])
    await call("get_tool_stats")
    await call("get_similar_traces", task="Alice employer", limit=5, success_only=True)
    conv = await call("create_conversation", user_id="bench")
    await call(
        "bulk_add_messages", conversation_id=conv["id"], messages=[{"role": "user", "content": "x"}]
    )
    await call("get_context", conversation_id=conv["id"])
    agent_step = await call(
        "record_step", conversation_id=conv["id"], reasoning="Alice Johnson", action_taken="a"
    )
    await call("explain_step", step_id=agent_step["id"])
    await call("get_entity_graph")
    await call("cypher_query", cypher="MATCH (n) RETURN count(n) AS total", params={})


async def client_cost(base: str, samples: int) -> float:
    """Mean seconds to build and close one ``httpx.AsyncClient`` (what the TCK does per call)."""
    started = time.perf_counter()
    for _ in range(samples):
        async with httpx.AsyncClient(base_url=base, timeout=30.0):
            pass
    return (time.perf_counter() - started) / samples


async def run(args: argparse.Namespace, base: str) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=base, timeout=30.0) as client:
        call = Caller(client)
        await call("setup")
        durations = []
        for index in range(args.scenarios):
            started = time.perf_counter()
            await scenario(call, index)
            durations.append(time.perf_counter() - started)
            say(args, f"scenario {index + 1}/{args.scenarios}: {durations[-1] * 1000:.0f} ms")
        await call("teardown")
    every = [s * 1000 for samples in call.samples.values() for s in samples]
    per_scenario = sum(durations) / len(durations)
    calls_per_scenario = len(every) / args.scenarios
    construct = await client_cost(base, args.client_samples)
    return {
        "scenarios": args.scenarios,
        "calls": len(every),
        "call_ms": {"p50": percentile(every, 50), "p95": percentile(every, 95)},
        "slowest_methods_p50_ms": dict(
            sorted(
                (
                    (name, percentile([s * 1000 for s in samples], 50))
                    for name, samples in call.samples.items()
                ),
                key=lambda item: -item[1],
            )[:5]
        ),
        "scenario_ms_mean": per_scenario * 1000,
        "tck_client_construct_ms": construct * 1000,
        "estimated_tck_run_s": (per_scenario + calls_per_scenario * construct) * TCK_SCENARIOS,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks bridge", description=__doc__)
    parser.add_argument("--scenarios", type=positive, default=40, help="default 40")
    parser.add_argument(
        "--client-samples", type=positive, default=50, help="clients built to time one (50)"
    )
    add_output_options(parser)
    args = parser.parse_args(argv)

    async def measure() -> dict[str, Any]:
        root = SQLiteBackend(":memory:", embeddings=False)
        try:
            app = create_app(root, bridge=":memory:")
            with LoopbackServer(app) as server:
                return await run(args, f"http://127.0.0.1:{server.port}/bridge")
        finally:
            await root.aclose()

    results = asyncio.run(measure())
    results["machine"] = machine()
    print(
        f"bridge: {results['calls']} calls in {results['scenarios']} scenarios, "
        f"p50 {results['call_ms']['p50']:.1f} ms, p95 {results['call_ms']['p95']:.1f} ms per "
        f"call; {results['scenario_ms_mean']:.0f} ms per scenario; the TCK client's own "
        f"{results['tck_client_construct_ms']:.0f} ms per call included, a {TCK_SCENARIOS}-"
        f"scenario run ≈ {results['estimated_tck_run_s']:.0f} s"
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
