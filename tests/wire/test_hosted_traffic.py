"""The hosted client and the local server speak the hosted spec, checked on real traffic.

Every exchange of the hosted contract configurations (``hosted-asgi``, ``hosted-loopback``
in ``tests/contract/harnesses.py``) is recorded; here each request body must fit the
spec's request schema and each answer on a spec route its response schema (extension
routes are not in the spec and are exempt). A scenario that calls every route once also
proves that the check covers all of them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from backends.hosted import HostedBackend
from backends.sqlite import SQLiteBackend
from nams_local.embeddings import HashingEmbedder
from nams_local.errors import InvalidInputError, NotFoundError
from nams_local.models import NewMessage, SearchMode
from nams_local.server import create_app

from .openapi_spec import OpenApiSpec
from .traffic import (
    SESSION_GROUP,
    SESSION_LOG,
    TRAFFIC_FILE_ENV,
    Exchange,
    RecordingTransport,
    TrafficLog,
    is_extension,
    violations,
)

ROOT = Path(__file__).resolve().parents[2]
TARGET = ("tests/contract",)

#: The spec operations HostedBackend uses (method, template): all memory routes.
CLIENT_OPERATIONS = {
    ("POST", "/v1/conversations"),
    ("GET", "/v1/conversations"),
    ("GET", "/v1/conversations/{id}"),
    ("DELETE", "/v1/conversations/{id}"),
    ("POST", "/v1/conversations/{id}/messages"),
    ("POST", "/v1/conversations/{id}/messages/bulk"),
    ("GET", "/v1/conversations/{id}/messages"),
    ("POST", "/v1/conversations/{id}/search"),
    ("GET", "/v1/conversations/{id}/context"),
    ("GET", "/v1/conversations/{id}/observations"),
    ("GET", "/v1/conversations/{id}/reflections"),
    ("GET", "/v1/conversations/{id}/extraction-status"),
    ("GET", "/v1/entities"),
    ("POST", "/v1/entities"),
    ("GET", "/v1/entities/{id}"),
    ("PUT", "/v1/entities/{id}"),
    ("DELETE", "/v1/entities/{id}"),
    ("POST", "/v1/entities/search"),
    ("PUT", "/v1/entities/{id}/feedback"),
    ("GET", "/v1/entities/{id}/history"),
    ("POST", "/v1/entities/{id}/merge"),
    ("GET", "/v1/entities/graph"),
    ("POST", "/v1/reasoning/steps"),
    ("GET", "/v1/reasoning/steps"),
    ("POST", "/v1/reasoning/tool-calls"),
    ("GET", "/v1/reasoning/trace/{conversationId}"),
    ("GET", "/v1/reasoning/explain/{stepId}"),
    ("GET", "/v1/reasoning/provenance/{entityId}"),
    ("POST", "/v1/query"),
}


@pytest.fixture(scope="module")
def spec() -> OpenApiSpec:
    return OpenApiSpec.load()


def operations(spec: OpenApiSpec, exchanges: list[Exchange]) -> set[tuple[str, str]]:
    used = set()
    for ex in exchanges:
        operation = None if is_extension(ex.method, ex.url) else spec.match(ex.method, ex.url)
        if operation is not None:
            used.add((operation.method, operation.template))
    return used


def contract_traffic(tmp_path: Path) -> list[Exchange]:
    """This session's hosted contract traffic; if the contract suite did not run in this
    session, its hosted configurations are run in a child pytest that hands traffic back."""
    if SESSION_LOG.exchanges:
        return SESSION_LOG.exchanges
    traffic = tmp_path / "traffic.jsonl"
    child = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "hosted", *TARGET],
        cwd=ROOT,
        env={**os.environ, TRAFFIC_FILE_ENV: str(traffic)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert child.returncode == 0, child.stdout[-4000:] + child.stderr[-2000:]
    log = TrafficLog()
    log.extend_from_file(traffic)
    return log.exchanges


@SESSION_GROUP
def test_contract_traffic_fits_the_spec(spec: OpenApiSpec, tmp_path: Path) -> None:
    exchanges = contract_traffic(tmp_path)

    problems = violations(spec, exchanges)

    assert exchanges
    assert problems == [], f"{len(problems)} violations:\n" + "\n".join(problems[:40])


async def test_every_client_route_fits_the_spec(spec: OpenApiSpec) -> None:
    """One call of every method (successes and typical failures), all on the wire."""
    log = TrafficLog()
    root = SQLiteBackend(":memory:", embedder=HashingEmbedder())
    app = create_app(root)
    transport = RecordingTransport(httpx.ASGITransport(app=app), log)
    try:
        async with HostedBackend("scenario", endpoint="http://t/v1", transport=transport) as b:
            await scenario(b)
    finally:
        await root.aclose()
    exchanges = log.exchanges

    assert violations(spec, exchanges) == []
    assert operations(spec, exchanges) == CLIENT_OPERATIONS
    assert {(ex.method, ex.status) for ex in exchanges if is_extension(ex.method, ex.url)} >= {
        ("GET", 200),
        ("POST", 201),
        ("DELETE", 200),
        ("POST", 200),
    }
    assert {ex.status for ex in exchanges} >= {200, 201, 400, 404}


async def scenario(b: HostedBackend) -> None:
    capabilities = await b.probe_capabilities()
    assert capabilities.relationship_writes and capabilities.vector_search
    conversation = await b.create_conversation(user_id="u", metadata={"topic": "x"})
    await b.create_conversation(metadata={"source": "e2e", "seq": 1, "ok": True, "x": None})
    await b.list_conversations(user_id="u", limit=5)
    await b.get_conversation(conversation.id)
    first = await b.add_message(conversation.id, "user", "Ada met Alan in London", {"n": [1]})
    await b.add_messages(
        conversation.id,
        [NewMessage(role="assistant", content="Nice"), NewMessage(role="system", content="ok")],
    )
    await b.list_messages(conversation.id, limit=2)
    modes: tuple[SearchMode | None, ...] = (None, "text", "vector", "hybrid")
    for mode in modes:
        await b.search_messages(conversation.id, "London", mode=mode)
    await b.get_context(conversation.id)
    await b.list_observations(conversation.id)
    await b.list_reflections(conversation.id)
    await b.get_extraction_status(conversation.id)
    ada = await b.add_entity("Ada", "person", "Mathematician", {"born": "1815"})
    alan = await b.add_entity("Alan", "person")
    london = await b.add_entity("London", "location")
    await b.list_entities()
    await b.list_entities(type="person")
    await b.update_entity(alan.id, description="Computer scientist")
    await b.search_entities("Ada", type="person", limit=3)
    await b.entity_feedback(ada.id, user_score=0.8, confirmed=True)
    relationship = await b.add_relationship(ada.id, london.id, "LIVES_IN", {"since": "1820"}, 0.9)
    await b.get_entity(ada.id)
    await b.get_entity_history(ada.id)
    await b.get_entity_by_name("ada")
    assert await b.get_entity_by_name("nobody") is None
    await b.entity_neighbourhood(ada.id, depth=2)
    await b.get_graph()
    step = await b.record_step(conversation.id, "Where does Ada live?", "look up", "London")
    await b.list_steps(conversation.id)
    await b.record_tool_call(
        "lookup", '{"who": "Ada"}', '{"city": "London"}', "completed", step.id, 12
    )
    await b.record_tool_call("orphan", "{}")
    await b.get_trace(conversation.id)
    await b.explain_step(step.id)
    await b.get_provenance(ada.id)
    await b.search_user_messages("u", "London")
    await b.merge_entities(alan.id, ada.id)
    await b.delete_relationship(relationship.id)
    await b.delete_entity(london.id)
    # Failures travel the same routes: 404 and 400 answers must fit the spec too.
    with pytest.raises(NotFoundError):
        await b.get_conversation("00000000-0000-4000-8000-000000000000")
    with pytest.raises(NotFoundError):
        await b.add_message("00000000-0000-4000-8000-000000000000", "user", "hi")
    with pytest.raises(NotFoundError):
        await b.explain_step("00000000-0000-4000-8000-000000000000")
    with pytest.raises(InvalidInputError):
        await b.merge_entities(ada.id, ada.id)
    found = await b.query("MATCH (p:Person {name: $name}) RETURN p.name AS name", {"name": "Ada"})
    assert found.rows == [{"name": "Ada"}]
    with pytest.raises(InvalidInputError):
        await b.query("MATCH (n) DETACH DELETE n")
    assert first.id
    await b.delete_conversation(conversation.id)


def test_violations_are_reported(spec: OpenApiSpec) -> None:
    """The check itself can fail: bad bodies, undocumented successes, unknown routes."""

    def ex(method: str, url: str, request: object, status: int, response: object) -> Exchange:
        return Exchange(method, url, request, status, response, "t")

    good = [
        ex("POST", "/v1/entities", {"name": "A", "type": "p"}, 201, {"id": "e"}),
        ex("GET", "/v1/entities/by-name?name=A", None, 200, {"anything": ["goes"]}),
        ex("GET", "/v1/capabilities", None, 200, {"vectorSearch": True}),
        ex("GET", "/v1/entities/e", None, 404, {"error": "Not found"}),
        # W1, a documented tolerance: scalar metadata values.
        ex("POST", "/v1/conversations", {"metadata": {"n": 1}}, 201, {"metadata": {"n": 1}}),
    ]
    bad = [
        ex("POST", "/v1/entities", {"name": "A"}, 201, {"id": "e"}),
        ex("POST", "/v1/entities", {"name": "A", "type": "p"}, 200, {"id": "e"}),
        ex("GET", "/v1/conversations/c/messages", None, 200, {"messages": [{"createdAt": None}]}),
        ex("GET", "/v1/entities/e", None, 404, {"detail": "Not found"}),
        ex("POST", "/v1/conversations", {"metadata": {"n": {"a": 1}}}, 201, {"id": "c"}),
        ex("GET", "/v1/nowhere", None, 200, {}),
    ]

    assert violations(spec, good) == []
    found = violations(spec, bad)
    assert len(found) == len(bad)
    assert "neither a spec route nor an extension" in found[-1]
