"""Every hosted route's answers validate against the hosted spec, over a real socket.

One uvicorn serves a populated store for the whole module; each case sends one request and
checks the status and the body against ``paths[p][method].responses[status].schema`` of
the hosted spec (``openapi_check``), including that every declared field is present. A
final test proves the cases cover every memory, reasoning, query and API-key operation of
the spec, so a forgotten route fails here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from backends.sqlite import SQLiteBackend
from nams_local import HashingEmbedder
from nams_local.server import create_app

from .openapi_check import assert_matches_spec, spec_operations
from .support import UNKNOWN_ID, bearer, live_server

Ids = dict[str, str]


@dataclass
class Served:
    http: httpx.Client
    ids: Ids


def _post(http: httpx.Client, path: str, body: Any, status: int = 201) -> dict[str, Any]:
    response = http.post(path, json=body)
    assert response.status_code == status, response.text
    result: dict[str, Any] = response.json()
    return result


def _populate(http: httpx.Client) -> Ids:
    conv = _post(http, "/v1/conversations", {"userId": "ann", "metadata": {"topic": "trips"}})
    c = conv["id"]
    _post(
        http, f"/v1/conversations/{c}/messages", {"role": "user", "content": "Ann lives in Oslo."}
    )
    _post(
        http,
        f"/v1/conversations/{c}/messages/bulk",
        {"messages": [{"role": "assistant", "content": "Oslo is lovely."}]},
    )
    doomed_conv = _post(http, "/v1/conversations", {"userId": "ann"})["id"]
    ann = _post(http, "/v1/entities", {"name": "Ann", "type": "person", "description": "the user"})
    oslo = _post(http, "/v1/entities", {"name": "Oslo", "type": "location", "description": "city"})
    doomed = _post(http, "/v1/entities", {"name": "Tmp", "type": "concept", "description": "x"})
    source = _post(http, "/v1/entities", {"name": "A. Smith", "type": "person", "description": "s"})
    target = _post(
        http, "/v1/entities", {"name": "Anna Smith", "type": "person", "description": "t"}
    )
    _post(
        http,
        "/v1/relationships",
        {"sourceId": ann["id"], "targetId": oslo["id"], "type": "LIVES_IN"},
    )
    step = _post(
        http,
        "/v1/reasoning/steps",
        {
            "conversationId": c,
            "reasoning": "Where does Ann live?",
            "actionTaken": "search",
            "result": "Oslo",
        },
    )
    _post(
        http,
        "/v1/reasoning/tool-calls",
        {
            "toolName": "search",
            "input": '{"q": "Ann"}',
            "output": '{"hits": ["Oslo"]}',
            "status": "success",
            "stepId": step["id"],
            "durationMs": 12,
        },
    )
    keys = {
        label: _post(http, "/v1/auth/api-keys", {"label": label})["id"]
        for label in ("a", "b", "c", "d")
    }
    assert http.delete(f"/v1/auth/api-keys/{keys['d']}").status_code == 200
    return {
        "conv": c,
        "doomed_conv": doomed_conv,
        "ann": ann["id"],
        "oslo": oslo["id"],
        "doomed": doomed["id"],
        "source": source["id"],
        "target": target["id"],
        "step": step["id"],
        "key_reveal": keys["a"],
        "key_rotate": keys["b"],
        "key_revoke": keys["c"],
        "key_revoked": keys["d"],
    }


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    db: Path = tmp_path_factory.mktemp("shapes") / "memory.db"
    root = SQLiteBackend(db, embedder=HashingEmbedder(), vector_index="numpy")
    app = create_app(root, db=db)
    try:
        with (
            live_server(app) as url,
            httpx.Client(base_url=url, headers=bearer("shape-token")) as http,
        ):
            yield Served(http, _populate(http))
    finally:
        asyncio.run(root.aclose())


@dataclass(frozen=True)
class Case:
    """One request. ``route`` is ``"METHOD /spec/path"``; ``at`` fills the path's
    placeholders with ids of the populated store (``UNKNOWN`` for an id no store holds)."""

    name: str
    route: str
    status: int
    at: dict[str, str] = field(default_factory=dict)
    query: str = ""
    body: Callable[[Ids], Any] | None = None
    optional: frozenset[str] = frozenset()
    answer: dict[str, Any] | None = None

    @property
    def method(self) -> str:
        return self.route.split(" ")[0]

    @property
    def spec_path(self) -> str:
        return self.route.split(" ")[1]

    def path(self, ids: Ids) -> str:
        path = self.spec_path
        for placeholder, key in self.at.items():
            path = path.replace("{" + placeholder + "}", UNKNOWN_ID if key == UNKNOWN else ids[key])
        return path + self.query


UNKNOWN = "unknown"
NOT_SCORED = frozenset({"score"})
CONV = {"id": "conv"}
ANN = {"id": "ann"}
MSGS = "POST /v1/conversations/{id}/messages"
BULK = "POST /v1/conversations/{id}/messages/bulk"
SEARCH = "POST /v1/conversations/{id}/search"
ENTITY = "/v1/entities/{id}"
STEPS = "/v1/reasoning/steps"
CALLS = "POST /v1/reasoning/tool-calls"
KEYS = "/v1/auth/api-keys"


def _step(ids: Ids) -> dict[str, str]:
    return {"conversationId": ids["conv"], "reasoning": "Rome?", "actionTaken": "check"}


def _call(ids: Ids) -> dict[str, Any]:
    return {
        "toolName": "web_search",
        "input": "{}",
        "output": "[]",
        "status": "completed",
        "stepId": ids["step"],
        "durationMs": 3,
    }


CASES = [
    # -- conversations --------------------------------------------------------------
    Case("create conversation", "POST /v1/conversations", 201,
         body=lambda i: {"userId": "ann", "metadata": {"k": "v"}}),
    Case("list conversations", "GET /v1/conversations", 200),
    Case("get conversation", "GET /v1/conversations/{id}", 200, CONV),
    Case("get unknown conversation", "GET /v1/conversations/{id}", 404, {"id": UNKNOWN}),
    Case("delete conversation", "DELETE /v1/conversations/{id}", 200, {"id": "doomed_conv"},
         answer={"status": "deleted"}),
    # -- messages -------------------------------------------------------------------
    Case("add message", MSGS, 201, CONV, body=lambda i: {"role": "user", "content": "To Rome."}),
    Case("add message bad role", MSGS, 400, CONV, body=lambda i: {"role": "x", "content": "y"}),
    Case("add message unknown conversation", MSGS, 404, {"id": UNKNOWN},
         body=lambda i: {"role": "user", "content": "x"}),
    Case("bulk add", BULK, 201, CONV,
         body=lambda i: {"messages": [{"role": "user", "content": "1"}] * 2}),
    Case("bulk add too many", BULK, 400, CONV,
         body=lambda i: {"messages": [{"role": "user", "content": "m"}] * 101}),
    Case("list messages", "GET /v1/conversations/{id}/messages", 200, CONV, "?limit=5",
         optional=NOT_SCORED),
    Case("search messages", SEARCH, 200, CONV, body=lambda i: {"query": "Ann", "limit": 3}),
    Case("search messages without query", SEARCH, 400, CONV, body=lambda i: {"limit": 3}),
    # -- tiers ----------------------------------------------------------------------
    Case("context", "GET /v1/conversations/{id}/context", 200, CONV, optional=NOT_SCORED),
    Case("observations", "GET /v1/conversations/{id}/observations", 200, CONV),
    Case("reflections", "GET /v1/conversations/{id}/reflections", 200, CONV),
    Case("extraction status", "GET /v1/conversations/{id}/extraction-status", 200, CONV),
    # -- entities -------------------------------------------------------------------
    Case("list entities", "GET /v1/entities", 200, query="?type=person", optional=NOT_SCORED),
    Case("create entity", "POST /v1/entities", 201,
         body=lambda i: {"name": "Rome", "type": "location", "description": "capital"}),
    Case("create entity without name", "POST /v1/entities", 400, body=lambda i: {"type": "x"}),
    Case("entity graph", "GET /v1/entities/graph", 200),
    Case("search entities", "POST /v1/entities/search", 200,
         body=lambda i: {"query": "Oslo city", "type": "location", "limit": 5}),
    Case("search entities without query", "POST /v1/entities/search", 400, body=lambda i: {}),
    Case("get entity", "GET " + ENTITY, 200, ANN),
    Case("get unknown entity", "GET " + ENTITY, 404, {"id": UNKNOWN}),
    Case("update entity", "PUT " + ENTITY, 200, {"id": "oslo"},
         body=lambda i: {"description": "capital of Norway"}, answer={"status": "updated"}),
    Case("update entity with nothing", "PUT " + ENTITY, 400, {"id": "oslo"}, body=lambda i: {}),
    Case("delete entity", "DELETE " + ENTITY, 200, {"id": "doomed"}, answer={"status": "deleted"}),
    Case("feedback", "PUT /v1/entities/{id}/feedback", 200, ANN,
         body=lambda i: {"userScore": 0.9, "confirmed": True}),
    Case("feedback out of range", "PUT /v1/entities/{id}/feedback", 400, ANN,
         body=lambda i: {"userScore": 9}),
    Case("history", "GET /v1/entities/{id}/history", 200, ANN),
    Case("merge", "POST /v1/entities/{id}/merge", 200, {"id": "source"},
         body=lambda i: {"targetId": i["target"]}),
    Case("self merge", "POST /v1/entities/{id}/merge", 400, ANN,
         body=lambda i: {"targetId": i["ann"]}),
    # -- reasoning ------------------------------------------------------------------
    Case("record step", "POST " + STEPS, 201, body=lambda i: {**_step(i), "result": "yes"}),
    Case("record step missing fields", "POST " + STEPS, 400,
         body=lambda i: {"conversationId": i["conv"]}),
    Case("list steps", "GET " + STEPS, 200, query="?conversation_id={conv}"),
    Case("list steps without conversation", "GET " + STEPS, 400),
    Case("record tool call", CALLS, 201, body=_call),
    Case("record tool call missing fields", CALLS, 400, body=lambda i: {"toolName": "t"}),
    Case("trace", "GET /v1/reasoning/trace/{conversationId}", 200, {"conversationId": "conv"}),
    Case("explain", "GET /v1/reasoning/explain/{stepId}", 200, {"stepId": "step"}),
    Case("explain unknown", "GET /v1/reasoning/explain/{stepId}", 404, {"stepId": UNKNOWN}),
    Case("provenance", "GET /v1/reasoning/provenance/{entityId}", 200, {"entityId": "ann"}),
    # -- query ----------------------------------------------------------------------
    Case("query without cypher", "POST /v1/query", 400, body=lambda i: {"params": {}}),
    Case("query", "POST /v1/query", 200,
         body=lambda i: {"cypher": "MATCH (p:Person {id: $id}) RETURN p.name AS who",
                         "params": {"id": i["ann"]}},
         answer={"columns": ["who"], "rows": [{"who": "Ann"}], "stats": {}}),
    Case("query that writes", "POST /v1/query", 400,
         body=lambda i: {"cypher": "MATCH (n) DETACH DELETE n"}),
    # -- API keys -------------------------------------------------------------------
    Case("list keys", "GET " + KEYS, 200, optional=frozenset({"revokedAt"})),
    Case("create key", "POST " + KEYS, 201, body=lambda i: {"label": "new"}),
    Case("create key without label", "POST " + KEYS, 400, body=lambda i: {}),
    Case("reveal key", "GET /v1/auth/api-keys/{id}/reveal", 200, {"id": "key_reveal"}),
    Case("reveal revoked key", "GET /v1/auth/api-keys/{id}/reveal", 410, {"id": "key_revoked"}),
    Case("reveal unknown key", "GET /v1/auth/api-keys/{id}/reveal", 404, {"id": UNKNOWN}),
    Case("rotate key", "POST /v1/auth/api-keys/{id}/rotate", 200, {"id": "key_rotate"}),
    Case("rotate revoked key", "POST /v1/auth/api-keys/{id}/rotate", 410, {"id": "key_revoked"}),
    Case("revoke key", "DELETE /v1/auth/api-keys/{id}", 200, {"id": "key_revoke"},
         answer={"status": "revoked"}),
    Case("revoke unknown key", "DELETE /v1/auth/api-keys/{id}", 404, {"id": UNKNOWN}),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_response_matches_the_hosted_spec(served: Served, case: Case) -> None:
    kwargs = {"json": case.body(served.ids)} if case.body else {}
    path = case.path(served.ids).replace("{conv}", served.ids["conv"])
    response = served.http.request(case.method, path, **kwargs)
    assert response.status_code == case.status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert_matches_spec(case.method, case.spec_path, case.status, body, optional=case.optional)
    if case.status >= 400:
        assert set(body) == {"error"}
    if case.answer is not None:
        assert body == case.answer


def test_unauthenticated_answer_matches_the_spec_401(served: Served) -> None:
    response = httpx.get(str(served.http.base_url.join("/v1/auth/api-keys")))
    assert response.status_code == 401
    assert_matches_spec("GET", "/v1/auth/api-keys", 401, response.json())


def test_the_cases_cover_every_memory_operation_of_the_spec() -> None:
    scope = ("/v1/conversations", "/v1/entities", "/v1/reasoning", "/v1/query", "/v1/auth/api-keys")
    covered = {(c.method, c.spec_path) for c in CASES}
    missing = spec_operations(scope) - covered
    assert not missing, sorted(missing)


def test_successful_cases_cover_every_memory_operation() -> None:
    scope = ("/v1/conversations", "/v1/entities", "/v1/reasoning", "/v1/query", "/v1/auth/api-keys")
    covered = {(c.method, c.spec_path) for c in CASES if c.status < 300}
    assert not spec_operations(scope) - covered
