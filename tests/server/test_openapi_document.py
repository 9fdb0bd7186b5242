"""The published OpenAPI document declares what the server does (W5).

schemathesis (``test_schemathesis.py``) checks answers against the document at random;
these pin the declarations themselves, so a constraint dropped from the document fails
here by name.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from .support import UNKNOWN_ID, bearer


def _body_schema(document: dict[str, Any], method: str, path: str) -> dict[str, Any]:
    ref = document["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]
    name = ref["$ref"].rsplit("/", 1)[1] if "$ref" in ref else None
    found: dict[str, Any] = document["components"]["schemas"][name] if name else ref
    return found


def _parameter(document: dict[str, Any], method: str, path: str, name: str) -> dict[str, Any]:
    for parameter in document["paths"][path][method].get("parameters", []):
        if parameter["name"] == name:
            found: dict[str, Any] = parameter
            return found
    raise AssertionError(f"{method} {path} has no parameter {name}")


def test_every_v1_success_is_typed_and_every_status_listed(app: FastAPI) -> None:
    document: dict[str, Any] = app.openapi()
    for path, operations in document["paths"].items():
        if not path.startswith("/v1"):
            continue
        for method, operation in operations.items():
            responses = operation["responses"]
            successes = [code for code in responses if code.startswith("2")]
            assert len(successes) == 1, (method, path, successes)
            schema = responses[successes[0]]["content"]["application/json"]["schema"]
            assert "$ref" in schema, (method, path, schema)
            assert {"400", "401"} <= set(responses), (method, path)
            # Deletes are idempotent (W2), but a message's names its conversation: an
            # unknown conversation or another conversation's message is a 404 (M1).
            idempotent_delete = (
                method == "delete"
                and not path.startswith("/v1/auth/")
                and not path.endswith("/messages/{messageId}")
            )
            if "{" in path:
                assert ("404" in responses) != idempotent_delete, (method, path)
            if "requestBody" in operation:
                assert "413" in responses, (method, path)
            for code, answer in responses.items():
                if code >= "400":
                    error = answer["content"]["application/json"]["schema"]
                    assert error == {"$ref": "#/components/schemas/ErrorResponse"}


def test_constraints_the_engine_enforces_are_declared(app: FastAPI) -> None:
    document: dict[str, Any] = app.openapi()
    message = _body_schema(document, "post", "/v1/conversations/{id}/messages")
    assert message["properties"]["role"]["enum"] == ["assistant", "system", "user"]
    assert message["properties"]["content"]["pattern"]
    feedback = _body_schema(document, "put", "/v1/entities/{id}/feedback")
    score = feedback["properties"]["userScore"]
    assert (score["minimum"], score["maximum"]) == (0, 1)
    depth = _parameter(document, "get", "/v1/entities/{id}/neighbourhood", "depth")["schema"]
    assert (depth["minimum"], depth["maximum"]) == (1, 5)
    limit = _parameter(document, "get", "/v1/conversations", "limit")["schema"]
    assert (limit["minimum"], limit["maximum"]) == (1, 200)
    entity = _body_schema(document, "post", "/v1/entities")
    assert entity["required"] == ["name"]
    assert [branch["required"] for branch in entity["anyOf"]] == [["type"], ["entityType"]]
    bulk = _body_schema(document, "post", "/v1/conversations/{id}/messages/bulk")
    items = bulk["properties"]["messages"]
    assert (items["minItems"], items["maxItems"]) == (1, 100)
    steps = _parameter(document, "get", "/v1/reasoning/steps", "conversation_id")
    assert steps["required"] is True and steps["schema"]["type"] == "string"
    call = _body_schema(document, "post", "/v1/reasoning/tool-calls")
    assert "stepId" not in call["required"] and "success" in call["properties"]["status"]["enum"]


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("OPTIONS", "/v1/entities/graph", "GET"),
        ("PUT", "/v1/entities/graph", "GET"),
        ("DELETE", "/v1/entities/search", "POST"),
        ("PUT", "/v1/entities/by-name", "GET"),
        ("OPTIONS", f"/v1/entities/{UNKNOWN_ID}", "DELETE, GET, PUT"),
        ("PATCH", "/v1/conversations", "GET, POST"),
    ],
)
async def test_allow_names_the_routes_of_that_path(
    http: httpx.AsyncClient, method: str, path: str, allow: str
) -> None:
    response = await http.request(method, path, headers=bearer("t"))

    assert response.status_code == 405
    assert response.headers["allow"] == allow
    assert response.json() == {"error": "method not allowed"}


async def test_a_query_parameter_given_twice_is_400(http: httpx.AsyncClient) -> None:
    response = await http.get("/v1/entities?type=a&type=b", headers=bearer("t"))

    assert response.status_code == 400
    assert "type" in response.json()["error"]


async def test_integral_numbers_are_integers(http: httpx.AsyncClient) -> None:
    conversation = (await http.post("/v1/conversations", headers=bearer("t"))).json()["id"]
    ok = await http.post(
        f"/v1/conversations/{conversation}/search",
        json={"query": "x", "limit": 16.0},
        headers=bearer("t"),
    )
    fractional = await http.post(
        f"/v1/conversations/{conversation}/search",
        json={"query": "x", "limit": 16.5},
        headers=bearer("t"),
    )

    assert ok.status_code == 200 and fractional.status_code == 400
