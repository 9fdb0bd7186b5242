"""The validity extension over ``/v1``: dated writes, ``asOf`` reads, invalidation, and
refused input (``400`` with nothing written)."""

from __future__ import annotations

from typing import Any

from .support import Api


async def _two_homes(api: Api) -> tuple[str, str, str, dict[str, Any]]:
    alex = await api.ok("POST", "/v1/entities", 201, json={"name": "Alex", "type": "person"})
    homes = [
        (await api.ok("POST", "/v1/entities", 201, json={"name": n, "type": "location"}))["id"]
        for n in ("Bangalore", "Berlin")
    ]
    await api.ok(
        "POST",
        "/v1/relationships",
        201,
        json={
            "sourceId": alex["id"],
            "targetId": homes[0],
            "type": "LIVES_IN",
            "validFrom": "2021-03",
        },
    )
    new = await api.ok(
        "POST",
        "/v1/relationships",
        201,
        json={
            "sourceId": alex["id"],
            "targetId": homes[1],
            "type": "LIVES_IN",
            "validFrom": "2026-10",
        },
    )
    return alex["id"], homes[0], homes[1], new


async def test_a_dated_write_supersedes_and_as_of_reads_the_past(alice: Api) -> None:
    alex, bangalore, berlin, new = await _two_homes(alice)
    assert (new["validFrom"], new["current"]) == ("2026-10", True)
    graph = await alice.ok("GET", "/v1/entities/graph")
    by_target = {edge["target"]: edge for edge in graph["edges"]}
    assert by_target[bangalore]["validUntil"] == "2026-10"
    assert by_target[bangalore]["current"] is False
    assert by_target[bangalore]["supersededBy"] == new["id"]
    then = await alice.ok("GET", "/v1/entities/graph", params={"asOf": "2024"})
    assert [edge["target"] for edge in then["edges"]] == [bangalore]
    around = await alice.ok(
        "GET", f"/v1/entities/{alex}/neighbourhood", params={"asOf": "2027-01", "depth": 1}
    )
    assert [edge["target"] for edge in around["edges"]] == [berlin]
    details = await alice.ok("GET", f"/v1/entities/{alex}")
    assert {r["targetId"]: r["current"] for r in details["relationships"]} == {
        bangalore: False,
        berlin: True,
    }


async def test_invalidate_closes_and_keeps_the_edge(alice: Api) -> None:
    _, _, berlin, new = await _two_homes(alice)
    closed = await alice.ok(
        "POST", f"/v1/relationships/{new['id']}/invalidate", json={"validUntil": "2027-02"}
    )
    assert (closed["id"], closed["current"], closed["validUntil"]) == (new["id"], False, "2027-02")
    bare = await alice.ok("POST", f"/v1/relationships/{new['id']}/invalidate")
    assert bare["current"] is False and "invalidatedAt" in bare
    graph = await alice.ok("GET", "/v1/entities/graph")
    assert berlin in {edge["target"] for edge in graph["edges"]}
    missing = await alice.request("POST", "/v1/relationships/nope/invalidate", json={})
    assert missing.status_code == 404


async def test_bad_validity_input_is_400_with_nothing_written(alice: Api) -> None:
    alex = await alice.ok("POST", "/v1/entities", 201, json={"name": "Alex", "type": "person"})
    oslo = await alice.ok("POST", "/v1/entities", 201, json={"name": "Oslo", "type": "location"})
    body = {"sourceId": alex["id"], "targetId": oslo["id"], "type": "LIVES_IN"}
    for extra in (
        {"validFrom": "next spring"},
        {"validFrom": 2021},
        {"validUntil": "2021-13"},
        {"validFrom": "2024", "validUntil": "2021"},
        {"supersede": "no"},
        {"validFrom": "x" * 10_000},
    ):
        response = await alice.request("POST", "/v1/relationships", json={**body, **extra})
        assert response.status_code == 400, (extra, response.text)
        assert "error" in response.json()
    for as_of in ("yesterday", "2021-02-30", "9" * 5000):
        response = await alice.request("GET", "/v1/entities/graph", params={"asOf": as_of})
        assert response.status_code == 400, as_of
    assert (await alice.ok("GET", "/v1/entities/graph"))["edges"] == []
