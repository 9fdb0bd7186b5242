"""Round trips through every route: what is written reads back equal, in the wire's shapes.

Extension routes are checked against the exact shapes the nams-local hosted client codes
against (``GET /v1/capabilities`` and friends).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from backends.sqlite import SQLiteBackend
from nams_local import HashingEmbedder
from nams_local.models import ConversationSearchHits, Entity, EntityGraph, Relationship
from nams_local.server import create_app
from tests.asgi import in_process

from .support import Api, api_routes, assert_error


async def test_conversations_round_trip(alice: Api) -> None:
    first = await alice.ok(
        "POST", "/v1/conversations", 201, json={"userId": "ann", "metadata": {"topic": "trips"}}
    )
    assert first["userId"] == "ann" and first["metadata"] == {"topic": "trips"}
    assert first["workspaceId"].startswith("ws-")
    second = await alice.ok("POST", "/v1/conversations", 201, json={"user_id": "bo"})
    assert second["userId"] == "bo"
    bare = await alice.ok("POST", "/v1/conversations", 201)  # the body is optional
    assert "userId" not in bare and bare["metadata"] == {}

    got = await alice.ok("GET", f"/v1/conversations/{first['id']}")
    assert {k: got[k] for k in first} == first
    assert got["messageCount"] == 0 and got["createdAt"] and got["updatedAt"]

    listed = (await alice.ok("GET", "/v1/conversations"))["conversations"]
    assert [c["id"] for c in listed] == [bare["id"], second["id"], first["id"]]  # newest first
    for param in ("user_id", "userId"):
        only = (await alice.ok("GET", "/v1/conversations", params={param: "ann"}))["conversations"]
        assert [c["id"] for c in only] == [first["id"]]
    limited = (await alice.ok("GET", "/v1/conversations", params={"limit": 1}))["conversations"]
    assert [c["id"] for c in limited] == [bare["id"]]

    assert await alice.ok("DELETE", f"/v1/conversations/{second['id']}") == {"status": "deleted"}
    assert_error(await alice.get(f"/v1/conversations/{second['id']}"), 404)
    # Idempotent (W2): the second delete answers as the first did.
    assert await alice.ok("DELETE", f"/v1/conversations/{second['id']}") == {"status": "deleted"}


async def test_messages_round_trip(alice: Api) -> None:
    conv = (await alice.ok("POST", "/v1/conversations", 201, json={"userId": "ann"}))["id"]
    one = await alice.ok(
        "POST",
        f"/v1/conversations/{conv}/messages",
        201,
        json={
            "role": "user",
            "content": "I moved to Oslo in May.",
            "metadata": {"namsKind": "turn", "n": 1},
        },
    )
    assert one["conversationId"] == conv and one["role"] == "user"
    assert one["content"] == "I moved to Oslo in May." and one["metadata"] == {
        "namsKind": "turn",
        "n": 1,
    }
    assert one["tokenCount"] > 0 and one["createdAt"]
    bulk = await alice.ok(
        "POST",
        f"/v1/conversations/{conv}/messages/bulk",
        201,
        json={
            "messages": [
                {"role": "assistant", "content": "Oslo is a fine city."},
                {"role": "system", "content": "Be brief."},
            ]
        },
    )
    assert [m["content"] for m in bulk["messages"]] == ["Oslo is a fine city.", "Be brief."]

    listed = (await alice.ok("GET", f"/v1/conversations/{conv}/messages"))["messages"]
    assert [m["id"] for m in listed] == [
        bulk["messages"][1]["id"],
        bulk["messages"][0]["id"],
        one["id"],
    ]
    assert listed[2] == one
    assert (
        len((await alice.ok("GET", f"/v1/conversations/{conv}/messages?limit=2"))["messages"]) == 2
    )
    assert (await alice.ok("GET", f"/v1/conversations/{conv}"))["messageCount"] == 3

    hits = await alice.ok(
        "POST",
        f"/v1/conversations/{conv}/search",
        json={"query": "where did I move", "limit": 2, "threshold": 0.4},
    )
    assert hits["searchType"] == "text"
    assert hits["messages"][0]["id"] == one["id"] and 0 < hits["messages"][0]["score"] <= 1

    context = await alice.ok("GET", f"/v1/conversations/{conv}/context")
    assert context["reflections"] == [] and context["observations"] == []
    assert [m["id"] for m in context["recentMessages"]] == [m["id"] for m in listed]
    assert await alice.ok("GET", f"/v1/conversations/{conv}/observations") == {"observations": []}
    assert await alice.ok("GET", f"/v1/conversations/{conv}/reflections") == {"reflections": []}

    status = await alice.ok("GET", f"/v1/conversations/{conv}/extraction-status")
    assert status["conversationId"] == conv
    assert [u["messageId"] for u in status["units"]] == [
        one["id"],
        *(m["id"] for m in bulk["messages"]),
    ]
    assert status["messages"] == status["units"]
    assert status["summary"] == {"skipped": 3}


async def test_entities_round_trip(alice: Api) -> None:
    conv = (await alice.ok("POST", "/v1/conversations", 201, json={}))["id"]
    await alice.ok(
        "POST",
        f"/v1/conversations/{conv}/messages",
        201,
        json={"role": "user", "content": "Ann works at Acme."},
    )
    ann = await alice.ok(
        "POST",
        "/v1/entities",
        201,
        json={
            "name": "Ann",
            "type": "person",
            "description": "the user",
            "properties": {"age": "40"},
        },
    )
    assert {k: ann[k] for k in ("name", "type", "description")} == {
        "name": "Ann",
        "type": "person",
        "description": "the user",
    }
    assert (
        ann["properties"] == {"age": "40"}
        and ann["confidence"] == 1.0
        and ann["sourceStage"] == "api"
    )
    acme = await alice.ok(
        "POST", "/v1/entities", 201, json={"name": "Acme", "entityType": "organization"}
    )
    assert acme["type"] == "organization"  # the TypeScript SDK's spelling alone works

    got = await alice.ok("GET", f"/v1/entities/{ann['id']}")
    assert ann.pop("reused") is False  # only the add response says whether it reused
    assert {k: got[k] for k in ann} == ann and got["relationships"] == []

    assert await alice.ok("PUT", f"/v1/entities/{ann['id']}", json={"description": "engineer"}) == {
        "status": "updated"
    }
    assert (await alice.ok("GET", f"/v1/entities/{ann['id']}"))["description"] == "engineer"

    people = (await alice.ok("GET", "/v1/entities", params={"type": "PERSON"}))["entities"]
    assert [e["id"] for e in people] == [ann["id"]]
    assert len((await alice.ok("GET", "/v1/entities"))["entities"]) == 2

    found = await alice.ok(
        "POST", "/v1/entities/search", json={"query": "engineer", "type": "person"}
    )
    assert found["searchType"] == "text" and [e["id"] for e in found["entities"]] == [ann["id"]]

    feedback = await alice.ok(
        "PUT", f"/v1/entities/{ann['id']}/feedback", json={"userScore": 0.75, "confirmed": True}
    )
    assert feedback == {"id": ann["id"], "updated": True}

    history = await alice.ok("GET", f"/v1/entities/{ann['id']}/history")
    assert history["entityId"] == ann["id"]
    assert [m["content"] for m in history["mentions"]] == ["Ann works at Acme."]
    assert history["mentions"][0]["conversationId"] == conv

    graph = await alice.ok("GET", "/v1/entities/graph")
    assert {n["id"] for n in graph["nodes"]} == {ann["id"], acme["id"]} and graph["edges"] == []

    dup = await alice.ok("POST", "/v1/entities", 201, json={"name": "Annie", "type": "person"})
    merged = await alice.ok("POST", f"/v1/entities/{dup['id']}/merge", json={"targetId": ann["id"]})
    assert merged == {"status": "merged", "sourceId": dup["id"], "targetId": ann["id"]}
    after = await alice.ok("GET", f"/v1/entities/{ann['id']}")
    assert [(r["relType"], r["targetId"], r["direction"]) for r in after["relationships"]] == [
        ("SAME_AS", dup["id"], "incoming")
    ]

    assert await alice.ok("DELETE", f"/v1/entities/{acme['id']}") == {"status": "deleted"}
    assert_error(await alice.get(f"/v1/entities/{acme['id']}"), 404)


async def test_reasoning_round_trip(alice: Api) -> None:
    conv = (await alice.ok("POST", "/v1/conversations", 201, json={}))["id"]
    ann = await alice.ok("POST", "/v1/entities", 201, json={"name": "Ann", "type": "person"})
    step = await alice.ok(
        "POST",
        "/v1/reasoning/steps",
        201,
        json={
            "conversationId": conv,
            "reasoning": "Who is Ann?",
            "actionTaken": "lookup",
            "result": "a person",
        },
    )
    assert {k: step[k] for k in ("conversationId", "reasoning", "actionTaken", "result")} == {
        "conversationId": conv,
        "reasoning": "Who is Ann?",
        "actionTaken": "lookup",
        "result": "a person",
    }
    call = await alice.ok(
        "POST",
        "/v1/reasoning/tool-calls",
        201,
        json={
            "toolName": "search",
            "input": '{"q": "Ann"}',
            "output": "[]",
            "status": "completed",
            "stepId": step["id"],
            "durationMs": 7,
        },
    )
    assert call["status"] == "success" and call["stepId"] == step["id"] and call["durationMs"] == 7
    orphan = await alice.ok(
        "POST", "/v1/reasoning/tool-calls", 201, json={"tool_name": "clock", "input": "{}"}
    )
    assert "stepId" not in orphan and orphan["status"] == "success"

    steps = await alice.ok("GET", "/v1/reasoning/steps", params={"conversation_id": conv})
    assert [s["id"] for s in steps["steps"]] == [step["id"]]

    trace = await alice.ok("GET", f"/v1/reasoning/trace/{conv}")
    assert trace["conversationId"] == conv
    assert [c["id"] for c in trace["toolCalls"]] == [call["id"]]
    assert [c["id"] for c in trace["steps"][0]["toolCalls"]] == [call["id"]]

    explained = await alice.ok("GET", f"/v1/reasoning/explain/{step['id']}")
    assert explained["id"] == step["id"] and explained["conversationId"] == conv
    assert [c["id"] for c in explained["toolCalls"]] == [call["id"]]
    assert explained["influencedEntities"] == [{"id": ann["id"], "name": "Ann", "type": "person"}]

    provenance = await alice.ok("GET", f"/v1/reasoning/provenance/{ann['id']}")
    assert provenance["entityId"] == ann["id"] and [s["id"] for s in provenance["steps"]] == [
        step["id"]
    ]


@pytest.fixture
async def vector_client() -> AsyncIterator[httpx.AsyncClient]:
    root = SQLiteBackend(":memory:", embedder=HashingEmbedder(), vector_index="numpy")
    app = create_app(root)
    async with in_process(app) as http:
        yield http
    await root.aclose()


async def test_capabilities_exact_shape(alice: Api, vector_client: httpx.AsyncClient) -> None:
    text_only = await alice.ok("GET", "/v1/capabilities")
    assert text_only == {
        "relationshipWrites": True,
        "entityByName": True,
        "userMessageSearch": True,
        "graphNeighbourhood": True,
        "vectorSearch": False,
        "cypherQuery": True,
        "relationshipValidity": True,
        "userPurge": True,
        "messageDelete": True,
        "searchModes": True,
    }
    with_vectors = await Api(vector_client, "v").ok("GET", "/v1/capabilities")
    assert with_vectors == {**text_only, "vectorSearch": True}


async def test_search_modes_extension(vector_client: httpx.AsyncClient) -> None:
    api = Api(vector_client, "modes")
    conv = (await api.ok("POST", "/v1/conversations", 201, json={}))["id"]
    await api.ok(
        "POST",
        f"/v1/conversations/{conv}/messages",
        201,
        json={"role": "user", "content": "Ann lives in Oslo"},
    )
    await api.ok("POST", "/v1/entities", 201, json={"name": "Oslo", "type": "place"})
    default = await api.ok("POST", f"/v1/conversations/{conv}/search", json={"query": "Oslo"})
    assert default["searchType"] == "hybrid"
    for mode in ("text", "vector", "hybrid"):
        hits = await api.ok(
            "POST", f"/v1/conversations/{conv}/search", json={"query": "Oslo", "mode": mode}
        )
        assert hits["searchType"] == mode and len(hits["messages"]) == 1
        found = await api.ok("POST", "/v1/entities/search", json={"query": "Oslo", "mode": mode})
        assert found["searchType"] == mode and found["entities"][0]["name"] == "Oslo"


async def test_relationship_extension_round_trip(alice: Api) -> None:
    ann = await alice.ok("POST", "/v1/entities", 201, json={"name": "Ann", "type": "person"})
    acme = await alice.ok(
        "POST", "/v1/entities", 201, json={"name": "Acme", "type": "organization"}
    )
    created = await alice.ok(
        "POST",
        "/v1/relationships",
        201,
        json={
            "sourceId": ann["id"],
            "targetId": acme["id"],
            "type": "WORKS_AT",
            "properties": {"since": 2020},
            "confidence": 0.8,
        },
    )
    relationship = Relationship.model_validate(created)
    assert relationship.to_wire() == created
    assert (created["sourceId"], created["targetId"], created["type"]) == (
        ann["id"],
        acme["id"],
        "WORKS_AT",
    )
    assert created["properties"] == {"since": 2020} and created["confidence"] == 0.8

    outgoing = (await alice.ok("GET", f"/v1/entities/{ann['id']}"))["relationships"]
    assert outgoing == [
        {
            "type": "WORKS_AT",
            "relType": "WORKS_AT",
            "targetId": acme["id"],
            "targetName": "Acme",
            "targetType": "organization",
            "direction": "outgoing",
            "id": created["id"],
            "properties": {"since": 2020},
            "confidence": 0.8,
            # Validity extension fields: current, since whenever, learned just now.
            "current": True,
            "recordedAt": created["recordedAt"],
        }
    ]
    incoming = (await alice.ok("GET", f"/v1/entities/{acme['id']}"))["relationships"]
    assert [(r["relType"], r["targetId"], r["direction"]) for r in incoming] == [
        ("WORKS_AT", ann["id"], "incoming")
    ]

    graph = EntityGraph.model_validate(
        await alice.ok("GET", f"/v1/entities/{ann['id']}/neighbourhood", params={"depth": 1})
    )
    assert {n.id for n in graph.nodes} == {ann["id"], acme["id"]}
    assert [(e.source, e.target, e.type) for e in graph.edges] == [
        (ann["id"], acme["id"], "WORKS_AT")
    ]
    expanded = await alice.ok(
        "POST", "/v1/graph/expand", json={"nodeId": ann["id"], "loadedIds": [ann["id"]]}
    )
    assert [n["id"] for n in expanded["nodes"]] == [acme["id"]] and len(expanded["edges"]) == 1
    assert_error(
        await alice.get(f"/v1/entities/{ann['id']}/neighbourhood", params={"depth": 6}), 400
    )

    assert await alice.ok("DELETE", f"/v1/relationships/{created['id']}") == {"status": "deleted"}
    assert (await alice.ok("GET", f"/v1/entities/{ann['id']}"))["relationships"] == []
    assert await alice.ok("DELETE", f"/v1/relationships/{created['id']}") == {"status": "deleted"}


async def test_entity_by_name_extension(alice: Api) -> None:
    ann = await alice.ok("POST", "/v1/entities", 201, json={"name": "Ann Lee", "type": "person"})
    assert ann.pop("reused") is False
    for name in ("Ann Lee", "ann lee", "  ANN   LEE "):
        found = await alice.ok("GET", "/v1/entities/by-name", params={"name": name})
        assert Entity.model_validate(found).id == ann["id"] and found == ann | {
            "updatedAt": found["updatedAt"]
        }
    assert (
        await alice.ok("GET", "/v1/entities/by-name", params={"name": "ann lee", "type": "PERSON"})
    )["id"] == ann["id"]
    assert_error(
        await alice.get("/v1/entities/by-name", params={"name": "Ann Lee", "type": "place"}), 404
    )
    assert_error(await alice.get("/v1/entities/by-name", params={"name": "Bo"}), 404)
    assert_error(await alice.get("/v1/entities/by-name"), 400)


async def test_user_message_search_extension(alice: Api) -> None:
    convs = []
    for text in ("Ann hikes in Norway", "Ann paints", "Ann cooks pasta"):
        conv = (await alice.ok("POST", "/v1/conversations", 201, json={"userId": "ann"}))["id"]
        await alice.ok(
            "POST",
            f"/v1/conversations/{conv}/messages",
            201,
            json={"role": "user", "content": text},
        )
        convs.append(conv)
    await alice.ok(
        "POST",
        "/v1/reasoning/steps",
        201,
        json={"conversationId": convs[0], "reasoning": "r", "actionTaken": "a"},
    )
    body = await alice.ok(
        "POST",
        "/v1/users/ann/messages/search",
        json={
            "query": "Norway hikes",
            "conversationLimit": 2,
            "perConversationLimit": 1,
            "excludeConversationId": convs[2],
        },
    )
    assert set(body) == {"conversations"}
    groups = [ConversationSearchHits.model_validate(g) for g in body["conversations"]]
    assert [g.conversation_id for g in groups] == [convs[1], convs[0]]
    assert all(
        set(g) == {"conversationId", "messages", "steps", "searchType"}
        for g in body["conversations"]
    )
    assert [m.content for m in groups[1].messages] == ["Ann hikes in Norway"]
    assert len(groups[1].steps) == 1 and groups[0].messages == []
    no_steps = await alice.ok(
        "POST", "/v1/users/ann/messages/search", json={"query": "Norway", "includeSteps": False}
    )
    assert all(g["steps"] == [] for g in no_steps["conversations"])


def test_published_openapi_marks_the_extensions(app: FastAPI) -> None:
    routes = api_routes(app)
    extensions = {(r.method, r.path) for r in routes if r.extension}
    assert extensions == {
        ("GET", "/v1/capabilities"),
        ("POST", "/v1/relationships"),
        ("DELETE", "/v1/relationships/{id}"),
        ("POST", "/v1/relationships/{id}/invalidate"),
        ("GET", "/v1/entities/by-name"),
        ("GET", "/v1/entities/{id}/neighbourhood"),
        ("POST", "/v1/users/{userId}/messages/search"),
        ("POST", "/v1/users/{userId}/purge"),
        ("DELETE", "/v1/conversations/{id}/messages/{messageId}"),
        ("POST", "/v1/graph/expand"),
    }
    document: dict[str, Any] = app.openapi()
    for path, operations in document["paths"].items():
        for operation in operations.values():
            flagged = bool(operation.get("x-nams-local-extension"))
            assert flagged == ("Extensions" in operation["tags"]), path
            assert "422" not in operation["responses"]
            if path.startswith("/v1"):
                assert operation["security"] == [{"BearerAuth": []}]
                assert "401" in operation["responses"]
    assert "HTTPValidationError" not in document["components"]["schemas"]
