"""The spec oracle itself: route matching and body validation against known cases."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from ..server.openapi_check import SPEC_SHA256
from .openapi_spec import SPEC_ENV, OpenApiSpec, find_spec


@pytest.fixture(scope="module")
def spec() -> OpenApiSpec:
    return OpenApiSpec.load()


def test_the_spec_found_is_the_published_one() -> None:
    """Beside the checkout (CI) or the pinned copy (a bare clone): the same bytes."""
    path = find_spec()

    assert path.name == "nams-openapi.json"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == SPEC_SHA256


def test_spec_path_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(SPEC_ENV, str(tmp_path / "copy.json"))

    assert find_spec() == tmp_path / "copy.json"


def test_missing_spec_is_reported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(SPEC_ENV, raising=False)
    start = tmp_path / "a" / "b.py"
    # The walk goes up to the file system's root: where a machine happens to keep a
    # shared/ folder above the temporary directory (a CI clone laid in /tmp), that copy is
    # what must be found; anywhere else, the error that says how to point at one.
    above = [
        folder / "shared" / "reference" / "nams-openapi.json"
        for folder in start.resolve().parents
        if (folder / "shared" / "reference" / "nams-openapi.json").is_file()
    ]
    if above:
        assert find_spec(start, pinned=None) == above[0]
        return
    with pytest.raises(FileNotFoundError, match=SPEC_ENV):
        find_spec(start, pinned=None)


@pytest.mark.parametrize(
    ("method", "url", "template"),
    [
        ("POST", "/v1/conversations/abc/messages", "/v1/conversations/{id}/messages"),
        ("GET", "/v1/conversations/abc/messages?limit=5", "/v1/conversations/{id}/messages"),
        ("POST", "/v1/conversations/abc/messages/bulk", "/v1/conversations/{id}/messages/bulk"),
        ("GET", "http://testserver/v1/conversations", "/v1/conversations"),
        ("GET", "/v1/entities/graph", "/v1/entities/graph"),
        ("GET", "/v1/entities/e%2F1", "/v1/entities/{id}"),
        ("POST", "/v1/entities/search", "/v1/entities/search"),
        ("PUT", "/v1/entities/e1/feedback", "/v1/entities/{id}/feedback"),
        ("GET", "/v1/reasoning/explain/s1", "/v1/reasoning/explain/{stepId}"),
        ("GET", "/v1/reasoning/steps?conversation_id=c", "/v1/reasoning/steps"),
    ],
)
def test_concrete_paths_match_their_templates(
    spec: OpenApiSpec, method: str, url: str, template: str
) -> None:
    operation = spec.match(method, url)

    assert operation is not None
    assert (operation.method, operation.template) == (method, template)


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("GET", "/v1/capabilities"),
        ("POST", "/v1/relationships"),
        ("GET", "/v1/entities/e1/neighbourhood"),
        ("POST", "/v1/users/u/messages/search"),
        ("PATCH", "/v1/conversations/abc"),
        ("GET", "/conversations"),
        ("GET", "/v1/conversations//messages"),
    ],
)
def test_extension_and_unknown_routes_do_not_match(
    spec: OpenApiSpec, method: str, url: str
) -> None:
    assert spec.match(method, url) is None


GOOD_AND_BAD_REQUESTS: list[tuple[str, str, Any, Any]] = [
    (
        "POST",
        "/v1/conversations/c/messages",
        {"role": "user", "content": "hi", "metadata": {"k": 1}},
        {"role": "user"},
    ),
    (
        "POST",
        "/v1/conversations/c/messages/bulk",
        {"messages": [{"role": "user", "content": "a"}]},
        {"messages": [{"role": "user", "content": 5}]},
    ),
    (
        "POST",
        "/v1/conversations/c/search",
        {"query": "q", "limit": 3},
        {"query": "q", "limit": "3"},
    ),
    (
        "POST",
        "/v1/entities",
        {"name": "Ada", "type": "person", "properties": {"born": "1815"}},
        {"name": "Ada", "type": "person", "properties": {"born": 1815}},
    ),
    (
        "POST",
        "/v1/reasoning/tool-calls",
        {"toolName": "t", "input": "{}", "status": "timeout"},
        {"toolName": "t", "input": "{}", "status": "completed"},
    ),
    ("PUT", "/v1/entities/e/feedback", {"userScore": 0.5, "confirmed": True}, {"confirmed": "yes"}),
    ("POST", "/v1/entities/e/merge", {"targetId": "t"}, {}),
    (
        "POST",
        "/v1/query",
        {"cypher": "RETURN 1", "params": {}},
        {"cypher": "RETURN 1", "params": []},
    ),
]


@pytest.mark.parametrize(("method", "url", "good", "bad"), GOOD_AND_BAD_REQUESTS)
def test_request_bodies(spec: OpenApiSpec, method: str, url: str, good: Any, bad: Any) -> None:
    assert spec.request_errors(method, url, good) == []
    assert spec.request_errors(method, url, bad) != []


def test_request_body_presence(spec: OpenApiSpec) -> None:
    assert spec.request_errors("POST", "/v1/conversations", None) == []  # optional body
    assert spec.request_errors("POST", "/v1/entities", None) == ["/v1/entities requires a body"]
    assert spec.request_errors("GET", "/v1/entities", {"x": 1}) == ["/v1/entities takes no body"]
    assert spec.request_errors("POST", "/v1/nope", {}) == [
        "POST /v1/nope is not a route of the spec"
    ]


GOOD_AND_BAD_RESPONSES: list[tuple[str, str, int, Any, Any]] = [
    (
        "GET",
        "/v1/conversations/c/messages",
        200,
        {"messages": [{"id": "m", "role": "user", "content": "x", "tokenCount": 1}]},
        {"messages": [{"id": "m", "tokenCount": "1"}]},
    ),
    (
        "GET",
        "/v1/conversations/c/context",
        200,
        {
            "reflections": [],
            "observations": [{"id": "o", "sourceMsgIds": ["m"]}],
            "recentMessages": [],
        },
        {"reflections": [], "observations": [{"id": "o", "sourceMsgIds": "m"}]},
    ),
    (
        "GET",
        "/v1/entities/e",
        200,
        {"id": "e", "relationships": [{"relType": "KNOWS", "targetId": "t"}]},
        {"id": "e", "relationships": [{"relType": None}]},
    ),
    (
        "POST",
        "/v1/conversations",
        201,
        {"id": "c", "workspaceId": "w", "metadata": {"a": "b", "n": 1, "t": True, "z": None}},
        {"id": "c", "metadata": {"a": [1]}},  # scalars are tolerated (W1), arrays are not
    ),
    ("GET", "/v1/entities/e", 404, {"error": "Not found"}, {"detail": "Not found"}),
    ("GET", "/v1/entities/graph", 200, {"nodes": [{"anything": 1}], "edges": []}, {"nodes": {}}),
]


@pytest.mark.parametrize(("method", "url", "status", "good", "bad"), GOOD_AND_BAD_RESPONSES)
def test_response_bodies(
    spec: OpenApiSpec, method: str, url: str, status: int, good: Any, bad: Any
) -> None:
    assert spec.response_errors(method, url, status, good) == []
    assert spec.response_errors(method, url, status, bad) != []


def test_undocumented_statuses(spec: OpenApiSpec) -> None:
    # Errors the spec does not list must still be {"error": "..."}.
    assert spec.response_errors("GET", "/v1/entities", 401, {"error": "no key"}) == []
    assert spec.response_errors("GET", "/v1/entities", 401, {"message": "no key"}) != []
    # A success status the spec does not list is a violation (creates answer 201).
    assert spec.response_errors("POST", "/v1/entities", 200, {"id": "e"}) == [
        "status 200 is not documented for POST /v1/entities"
    ]
