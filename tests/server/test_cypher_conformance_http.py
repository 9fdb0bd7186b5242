"""The Cypher conformance table over HTTP: a real ``nams-local serve`` on a free port, a
file seeded with the table's memory graph, and ``POST /v1/query`` asked by raw HTTP and by
the hosted client for a subset of the table (every kind of value and clause once)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from backends.hosted import HostedBackend
from backends.sqlite import SQLiteBackend
from nams_local.server.auth import derived_workspace
from tests.backends.sqlite.test_cypher_conformance import comparable, resolved
from tests.cypher_conformance import CASES, Case, seed

from .processes import ServeProcess, serve_process
from .support import bearer

TOKEN = "conformance-tenant"

#: One case of each kind: labels, parameters, literals, chains, mentions, paths,
#: OPTIONAL MATCH, WITH, aggregates, steps and tool calls, nodes as maps.
SUBSET = {
    "count-everything",
    "relationship-types",
    "entity-type-labels",
    "return-parameter",
    "return-literals",
    "parameter-map",
    "message-chain",
    "mentions-of-a-message",
    "optional-match-mentions",
    "path-length",
    "with-then-filter",
    "aggregate-over-nothing",
    "trace-as-agent-memory-reads-it",
    "node-is-its-property-map",
}
HTTP_CASES = [case for case in CASES if case.id in SUBSET]


async def _seed(path: Path) -> dict[str, str]:
    engine = SQLiteBackend(path, embeddings=False, workspace=derived_workspace(TOKEN))
    try:
        return await seed(engine)
    finally:
        await engine.aclose()


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[ServeProcess, dict[str, str]]]:
    tmp_path = tmp_path_factory.mktemp("cypher-conformance")
    db = tmp_path / "seeded.db"
    ids = asyncio.run(_seed(db))
    args = ["--port", "0", "--db", str(db), "--no-embeddings"]
    with serve_process(args, tmp_path, stderr=tmp_path / "server.log") as process:
        yield process, ids


def test_the_subset_is_all_there() -> None:
    assert {case.id for case in HTTP_CASES} == SUBSET


@pytest.mark.parametrize("case", HTTP_CASES, ids=lambda c: c.id)
def test_raw_http(served: tuple[ServeProcess, dict[str, str]], case: Case) -> None:
    process, ids = served
    with httpx.Client(base_url=process.base_url, timeout=30) as http:
        answer = http.post(
            "/v1/query",
            json={"cypher": case.cypher, "params": resolved(case.params, ids)},
            headers=bearer(TOKEN),
        )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["stats"] == {}
    if case.rows:
        assert body["columns"] == list(case.rows[0])
    assert comparable(case, body["rows"]) == comparable(case, case.rows)


@pytest.mark.parametrize("case", HTTP_CASES, ids=lambda c: c.id)
async def test_hosted_client(served: tuple[ServeProcess, dict[str, str]], case: Case) -> None:
    process, ids = served
    hosted = HostedBackend(TOKEN, endpoint=f"{process.base_url}/v1", max_retries=0)
    try:
        result = await hosted.query(case.cypher, resolved(case.params, ids))
    finally:
        await hosted.aclose()
    assert comparable(case, result.rows) == comparable(case, case.rows)


def test_a_syntax_error_quotes_the_query_over_http(
    served: tuple[ServeProcess, dict[str, str]],
) -> None:
    process, _ = served
    cypher = "MATCH (n:conversation RETURN n"
    with httpx.Client(base_url=process.base_url, timeout=30) as http:
        answer = http.post("/v1/query", json={"cypher": cypher}, headers=bearer(TOKEN))
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert cypher in error and "Conversation" not in error
