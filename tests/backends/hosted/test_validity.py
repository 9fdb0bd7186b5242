"""Relationship validity over the hosted client: unchanged on the hosted wire (the fields
are dropped there, said once), sent to a server that advertises ``relationshipValidity``."""

from __future__ import annotations

import pytest

from backends.hosted import HostedBackend
from nams_local.errors import NotSupportedError

from .scripted_server import Reply, ScriptedServer

WRITES_ONLY = {"relationshipWrites": True, "graphNeighbourhood": True}
WITH_VALIDITY = {**WRITES_ONLY, "relationshipValidity": True}
EDGE = {"id": "r1", "sourceId": "a", "targetId": "b", "type": "LIVES_IN"}
GRAPH: dict[str, list[object]] = {"nodes": [], "edges": []}
WARNING = "cannot store relationship validity"


def client(server: ScriptedServer) -> HostedBackend:
    return HostedBackend("k", endpoint=f"{server.url}/v1", max_retries=0)


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if WARNING in r.getMessage()]


async def test_hosted_nams_never_receives_validity(
    server: ScriptedServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.script("GET", "/v1/capabilities", Reply(404, {"error": "not found"}))
    server.script("GET", "/v1/entities/graph", Reply(200, GRAPH), Reply(200, GRAPH))
    async with client(server) as backend:
        await backend.get_graph(as_of="2024")
        await backend.get_graph(as_of="2025-01")
        with pytest.raises(NotSupportedError):
            await backend.invalidate_relationship("r1")
    graph_reads = server.requests_to("GET", "/v1/entities/graph")
    assert [r.query for r in graph_reads] == [{}, {}]
    assert len(_warnings(caplog)) == 1
    assert not server.requests_to("POST", "/v1/relationships/r1/invalidate")


async def test_a_plain_graph_read_makes_no_probe(server: ScriptedServer) -> None:
    server.script("GET", "/v1/entities/graph", Reply(200, GRAPH))
    async with client(server) as backend:
        await backend.get_graph()
    assert [r.path for r in server.received] == ["/v1/entities/graph"]


async def test_a_server_without_validity_gets_the_plain_body_and_one_warning(
    server: ScriptedServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.script("GET", "/v1/capabilities", Reply(200, WRITES_ONLY))
    server.script("POST", "/v1/relationships", Reply(201, EDGE), Reply(201, EDGE), Reply(201, EDGE))
    async with client(server) as backend:
        await backend.add_relationship("a", "b", "LIVES_IN", valid_from="2021-03")
        await backend.add_relationship("a", "b", "LIVES_IN", supersede=False)
        await backend.add_relationship("a", "b", "LIVES_IN")
    bodies = [r.json() for r in server.requests_to("POST", "/v1/relationships")]
    assert bodies == [{"sourceId": "a", "targetId": "b", "type": "LIVES_IN"}] * 3
    assert len(_warnings(caplog)) == 1


async def test_a_server_with_validity_gets_every_field(
    server: ScriptedServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.script("GET", "/v1/capabilities", Reply(200, WITH_VALIDITY))
    closed = {**EDGE, "validUntil": "2026-10", "current": False}
    server.script("POST", "/v1/relationships", Reply(201, {**EDGE, "validFrom": "2021-03"}))
    server.script("POST", "/v1/relationships/r1/invalidate", Reply(200, closed))
    server.script("GET", "/v1/entities/graph", Reply(200, GRAPH))
    server.script("GET", "/v1/entities/a/neighbourhood", Reply(200, GRAPH))
    async with client(server) as backend:
        made = await backend.add_relationship(
            "a", "b", "LIVES_IN", valid_from="2021-03", supersede=False
        )
        ended = await backend.invalidate_relationship("r1", "2026-10")
        await backend.get_graph(as_of="2024-06")
        await backend.entity_neighbourhood("a", 2, as_of="2024")
    assert made.valid_from == "2021-03"
    assert (ended.valid_until, ended.current) == ("2026-10", False)
    [body] = [r.json() for r in server.requests_to("POST", "/v1/relationships")]
    assert body == {
        "sourceId": "a",
        "targetId": "b",
        "type": "LIVES_IN",
        "validFrom": "2021-03",
        "supersede": False,
    }
    [invalidated] = server.requests_to("POST", "/v1/relationships/r1/invalidate")
    assert invalidated.json() == {"validUntil": "2026-10"}
    assert server.requests_to("GET", "/v1/entities/graph")[0].query == {"asOf": ["2024-06"]}
    neighbourhood = server.requests_to("GET", "/v1/entities/a/neighbourhood")[0]
    assert neighbourhood.query == {"depth": ["2"], "asOf": ["2024"]}
    assert _warnings(caplog) == []
