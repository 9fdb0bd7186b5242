"""``POST /v1/query`` on the real app over the SQLite engine: reads answer the hosted
``{columns, rows, stats}`` shape (to raw HTTP and to the hosted client), while writes and
bad Cypher are 400 ``{"error": ...}`` and leave the graph as it was."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from backends.hosted import HostedBackend
from nams_local.errors import InvalidInputError
from tests.asgi import asgi_hosted
from tests.cypher_support import BOBBY, READS, WRITES, Read, build_graph

from .support import Api, assert_error


@pytest.fixture
async def hosted(app: FastAPI, alice: Api) -> AsyncIterator[HostedBackend]:
    """The hosted client as Alice, in process (``alice`` keeps the app's lifespan open)."""
    async with asgi_hosted(app, alice.token, max_retries=0) as backend:
        await backend.probe_capabilities()
        yield backend


@pytest.fixture
async def ids(hosted: HostedBackend) -> dict[str, str]:
    return await build_graph(hosted)


async def _query(api: Api, cypher: str, params: dict[str, Any] | None = None) -> httpx.Response:
    return await api.post("/v1/query", json={"cypher": cypher, "params": params or {}})


async def _graph(api: Api) -> Any:
    return await api.ok("GET", "/v1/entities/graph")


@pytest.mark.parametrize("read", READS, ids=lambda r: r.id)
async def test_reads_answer_the_hosted_shape(alice: Api, ids: dict[str, str], read: Read) -> None:
    body = await alice.ok("POST", "/v1/query", json={"cypher": read.cypher, "params": read.params})
    assert body == {"columns": read.columns, "rows": read.rows, "stats": {}}


@pytest.mark.parametrize("read", READS, ids=lambda r: r.id)
async def test_reads_through_the_hosted_client(
    hosted: HostedBackend, ids: dict[str, str], read: Read
) -> None:
    result = await hosted.query(read.cypher, read.params)
    assert (result.columns, result.rows) == (read.columns, read.rows)


async def test_params_may_be_omitted_or_null(alice: Api, ids: dict[str, str]) -> None:
    cypher = "MATCH (p:Location) RETURN p.name"
    for body in ({"cypher": cypher}, {"cypher": cypher, "params": None}):
        assert (await alice.ok("POST", "/v1/query", json=body))["rows"] == [{"p.name": "London"}]


@pytest.mark.parametrize("cypher", WRITES)
async def test_writes_are_400_and_change_nothing(
    alice: Api, ids: dict[str, str], cypher: str
) -> None:
    before = await _graph(alice)
    assert "read-only" in assert_error(await _query(alice, cypher), 400)
    assert await _graph(alice) == before


async def test_the_hosted_client_gets_the_refusal_as_invalid_input(
    hosted: HostedBackend, ids: dict[str, str]
) -> None:
    with pytest.raises(InvalidInputError, match="read-only"):
        await hosted.query("MATCH (n {name: $n}) SET n.name = 'x' RETURN n", {"n": "Ada"})
    assert (await hosted.get_entity(ids["ada"])).name == "Ada"


async def test_a_write_word_inside_a_string_is_allowed(alice: Api, ids: dict[str, str]) -> None:
    cypher = "MATCH (e) WHERE e.name STARTS WITH 'Robert\\'); DROP' RETURN e.id AS id, e.name"
    body = await alice.ok("POST", "/v1/query", json={"cypher": cypher})
    assert body["rows"] == [{"id": ids["bobby"], "e.name": BOBBY}]


@pytest.mark.parametrize(
    "body",
    [
        {"cypher": "MATCH (n RETURN n"},
        {"cypher": "MATCH (n) RETURN n.name ORDER"},
        {"cypher": "RETURN"},
        {"cypher": "MATCH (n) WHERE n.name = $missing RETURN n"},
        {"cypher": "MATCH (n) WHERE n.name = $p RETURN n", "params": {"p": 2**70}},
        {"cypher": ""},
        {"cypher": 42},
        {"params": {}},
        {"cypher": "MATCH (n) RETURN n", "params": ["not", "a", "map"]},
    ],
)
async def test_malformed_queries_are_400(alice: Api, ids: dict[str, str], body: Any) -> None:
    before = await _graph(alice)
    assert_error(await alice.post("/v1/query", json=body), 400)
    assert await _graph(alice) == before


async def test_each_caller_queries_only_its_workspace(
    alice: Api, bob: Api, ids: dict[str, str]
) -> None:
    body = await bob.ok("POST", "/v1/query", json={"cypher": "MATCH (n) RETURN count(n) AS n"})
    assert body["rows"] == [{"n": 0}]


async def test_skip_and_limit_page_the_aggregated_rows(alice: Api, ids: dict[str, str]) -> None:
    """Aggregates count every match; LIMIT and SKIP then page the one aggregated row."""
    cypher = "MATCH (p:Person)-[:WORKS_AT]->(o) RETURN count(p) AS n, collect(o.name) AS orgs"
    body = await alice.ok("POST", "/v1/query", json={"cypher": f"{cypher} LIMIT 1"})
    ((n, orgs),) = [(row["n"], sorted(row["orgs"])) for row in body["rows"]]
    assert (n, orgs) == (3, ["Acme", "Acme", "Analytical Engines Ltd"])
    assert (await alice.ok("POST", "/v1/query", json={"cypher": f"{cypher} SKIP 1"}))["rows"] == []
