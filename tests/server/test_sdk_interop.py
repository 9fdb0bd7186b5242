"""A client we did not write: the official ``neo4j-agent-memory`` Python SDK (PyPI).

``nams-local serve`` runs as a real process with a configured key; the SDK is pointed at
it exactly as at hosted NAMS — ``MemorySettings(backend="nams", nams=NamsConfig(
endpoint="http://127.0.0.1:PORT/v1", api_key=...))`` — and a scripted session runs through
its public accessors. What is written is read back equal.

The SDK (0.8.0) has public methods for most operations. Entity update, delete, merge, list
and graph have ``EndpointSpec`` constants in its NAMS module but no public method; those
requests go through the SDK's own ``HttpTransport`` with its own specs, so its URL
building, auth header and error mapping are still the ones under test. Relationships can
only be written through the local extension route (the SDK refuses ``add_relationship``
on NAMS), so the test creates them with plain httpx and reads them through the SDK.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
from neo4j_agent_memory import MemoryClient, MemorySettings
from neo4j_agent_memory.core.exceptions import (
    AuthenticationError,
    NotFoundError,
    ValidationError,
)
from neo4j_agent_memory.memory.reasoning import ToolCallStatus
from neo4j_agent_memory.nams import NamsLongTermMemory, NamsShortTermMemory
from neo4j_agent_memory.nams import long_term as sdk_long_term

from .processes import ServeProcess
from .sdk_servers import keyed_server, sdk_settings
from .support import bearer

KEY = "nams_sdk_interop_key"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    with keyed_server(tmp_path_factory.mktemp("sdk"), KEY) as process:
        yield process


def _settings(served: ServeProcess, key: str = KEY) -> MemorySettings:
    return sdk_settings(served, key)


async def _refused(settings: MemorySettings) -> AuthenticationError:
    """Connecting is refused; the client is closed all the same (the SDK leaves its HTTP
    session open when its connect-time auth probe fails)."""
    client = MemoryClient(settings)
    try:
        with pytest.raises(AuthenticationError) as refused:
            await client.connect()
    finally:
        await client.close()
    return refused.value


@pytest.fixture
async def sdk(served: ServeProcess) -> AsyncIterator[MemoryClient]:
    async with MemoryClient(_settings(served)) as client:
        assert client.is_nams and client.backend == "nams"
        yield client


@pytest.fixture
def own_served(tmp_path: Path) -> Iterator[ServeProcess]:
    """A server of the test's own, for a session that must not depend on which other
    tests ran before it on the same (pytest-xdist) worker."""
    with keyed_server(tmp_path, KEY, "own.db") as process:
        yield process


@pytest.fixture
async def own_sdk(own_served: ServeProcess) -> AsyncIterator[MemoryClient]:
    async with MemoryClient(_settings(own_served)) as client:
        yield client


async def test_short_term_memory_session(sdk: MemoryClient) -> None:
    st = cast(NamsShortTermMemory, sdk.short_term)
    conv = await st.create_conversation(
        "s1", user_identifier="sdk-user", metadata={"topic": "moving"}
    )
    cid = str(conv.id)
    assert conv.metadata == {"topic": "moving"}

    first = await st.add_message(cid, "user", "I moved to Lisbon last spring.")
    assert (first.role.value, first.content, str(first.conversation_id)) == (
        "user",
        "I moved to Lisbon last spring.",
        cid,
    )
    written = [
        {"role": "assistant", "content": "Lisbon is sunny."},
        {"role": "user", "content": "I work at Azul Labs."},
    ]
    bulk = await st.bulk_add_messages(cid, written)
    assert [(m.role.value, m.content) for m in bulk] == [(w["role"], w["content"]) for w in written]

    read = await st.get_conversation(cid)
    assert [(m.role.value, m.content) for m in read.messages] == [
        ("user", "I moved to Lisbon last spring."),
        ("assistant", "Lisbon is sunny."),
        ("user", "I work at Azul Labs."),
    ]
    assert [m.id for m in read.messages] == [first.id, *(m.id for m in bulk)]

    hits = await st.search_messages("where did I move", session_id=cid, limit=2)
    assert hits and hits[0].id == first.id

    context = await st.get_context("anything", session_id=cid)
    assert "## Recent Messages" in context and "[user] I work at Azul Labs." in context

    listed = await st.list_conversations(user_identifier="sdk-user")
    assert [(str(c.id), c.metadata) for c in listed] == [(cid, {"topic": "moving"})]
    assert await st.list_conversations(user_identifier="nobody") == []

    # serve extracts in the background (like hosted NAMS): wait, then the status is complete.
    lt = cast(NamsLongTermMemory, sdk.long_term)
    assert await lt.wait_for_extraction(session_id=cid, timeout=30) is True
    status = await st.get_extraction_status(cid)
    assert status.is_complete and sum(status.summary.values()) == 3 and len(status.messages) == 3
    assert await st.get_observations(cid) == []
    assert await st.get_reflections(cid) == []

    await st.clear_session(cid)
    with pytest.raises(NotFoundError):
        await st.get_conversation(cid)


async def _transport(sdk: MemoryClient, spec: Any, **kwargs: Any) -> Any:
    """A request through the SDK's own transport, for operations it has no method for."""
    return await sdk._nams_backend.transport.request(spec, **kwargs)  # type: ignore[union-attr]


async def test_long_term_memory_session(own_sdk: MemoryClient, own_served: ServeProcess) -> None:
    sdk, served = own_sdk, own_served
    lt, st = cast(NamsLongTermMemory, sdk.long_term), sdk.short_term
    # What the user said of themselves in an earlier session, then today's message.
    earlier = str((await st.create_conversation("s1", user_identifier="sdk-user")).id)
    await st.bulk_add_messages(
        earlier,
        [
            {"role": "user", "content": "I moved to Lisbon last spring."},
            {"role": "user", "content": "I work at Azul Labs."},
        ],
    )
    assert await lt.wait_for_extraction(session_id=earlier, timeout=30) is True
    conv = str((await st.create_conversation("s2", user_identifier="sdk-user")).id)
    await st.add_message(conv, "user", "Priya joined Azul Labs in Lisbon.")
    assert await lt.wait_for_extraction(session_id=conv, timeout=30) is True

    priya = await lt.add_entity("Priya", "PERSON", description="a colleague")
    azul = await lt.add_entity("Azul Labs", "ORGANIZATION", description="a startup")
    lisbon = await lt.add_entity("Lisbon", "LOCATION", description="capital of Portugal")
    assert (priya.name, priya.type, priya.description) == ("Priya", "PERSON", "a colleague")

    found = await lt.search_entities("startup", limit=5)
    assert [e.id for e in found] == [azul.id]
    by_name = await lt.get_entity_by_name("Lisbon")
    assert by_name is not None and by_name.id == lisbon.id

    # Relationships: written through the local extension, read through the SDK.
    with httpx.Client(base_url=served.base_url, headers=bearer(KEY)) as http:
        for target in (azul, lisbon):
            body = {"sourceId": str(priya.id), "targetId": str(target.id), "type": "LINKED_TO"}
            assert http.post("/v1/relationships", json=body).status_code == 201
    relationships = await lt.get_entity_relationships(priya.id)
    # The two written edges, plus the one the server extracted from the message.
    assert sorted((str(r.target_id), r.type) for r in relationships) == sorted(
        [(str(azul.id), "LINKED_TO"), (str(lisbon.id), "LINKED_TO"), (str(azul.id), "WORKS_AT")]
    )
    related = await lt.get_related_entities(priya.id)
    assert {r["targetName"] for r in related} == {"Azul Labs", "Lisbon"}
    expanded = await lt.expand_graph(str(priya.id), loaded_ids=[str(priya.id)])
    assert {n["id"] for n in expanded["nodes"]} == {str(azul.id), str(lisbon.id)}
    assert len(expanded["edges"]) == 3  # two LINKED_TO and the extracted WORKS_AT

    await lt.set_entity_feedback(priya.id, "positive")
    history = await lt.get_entity_history(priya.id)
    assert [m["content"] for m in history] == ["Priya joined Azul Labs in Lisbon."]
    provenance = await lt.get_entity_provenance(priya.id)
    assert provenance == {"entityId": str(priya.id), "steps": []}

    # No public SDK method: update, list, merge, graph, delete via the SDK's transport.
    updated = await _transport(
        sdk,
        sdk_long_term._SPEC_UPDATE_ENTITY,
        path_params={"entity_id": str(lisbon.id)},
        json={"description": "city on the Tagus"},
    )
    assert updated == {"status": "updated"}
    after = await lt.search_entities("Tagus")
    assert [(e.id, e.description) for e in after] == [(lisbon.id, "city on the Tagus")]
    listed = await _transport(sdk, sdk_long_term._SPEC_LIST_ENTITIES, params={"type": "person"})
    # The user's own entity (extraction named it after the user id; the first session's
    # "I" statements made it), then Priya.
    assert [e["name"] for e in listed["entities"]] == ["sdk-user", "Priya"]

    dup = await lt.add_entity("P. Sharma", "PERSON")
    merged = await _transport(
        sdk,
        sdk_long_term._SPEC_MERGE_ENTITIES,
        path_params={"entity_id": str(dup.id)},
        json={"targetId": str(priya.id)},
    )
    assert merged == {"status": "merged", "sourceId": str(dup.id), "targetId": str(priya.id)}
    graph = await _transport(sdk, sdk_long_term._SPEC_ENTITY_GRAPH)
    names = {n["id"]: n["name"] for n in graph["nodes"]}
    assert set(names.values()) == {"Priya", "Azul Labs", "Lisbon", "sdk-user"}
    assert sorted((names[e["source"]], e["type"], names[e["target"]]) for e in graph["edges"]) == [
        ("Priya", "LINKED_TO", "Azul Labs"),
        ("Priya", "LINKED_TO", "Lisbon"),
        ("Priya", "WORKS_AT", "Azul Labs"),
        ("sdk-user", "LIVES_IN", "Lisbon"),
        ("sdk-user", "WORKS_AT", "Azul Labs"),
    ]

    deleted = await _transport(
        sdk, sdk_long_term._SPEC_DELETE_ENTITY, path_params={"entity_id": str(azul.id)}
    )
    assert deleted == {"status": "deleted"}
    with pytest.raises(NotFoundError):
        await lt.get_related_entities(azul.id)
    with pytest.raises(ValidationError):  # the SDK maps our 400 to its ValidationError
        await _transport(sdk, sdk_long_term._SPEC_ADD_ENTITY, json={"type": "person"})


async def test_reasoning_memory_session(sdk: MemoryClient) -> None:
    conv = str((await sdk.short_term.create_conversation("s3", user_identifier="sdk-user")).id)
    rs = sdk.reasoning
    trace = await rs.start_trace(conv, "find a restaurant")
    first = await rs.add_step(
        trace.id, thought="Need options", action="search", observation="3 found"
    )
    call = await rs.record_tool_call(
        first.id,
        "web_search",
        {"q": "restaurants Lisbon"},
        result={"hits": 3},
        status=ToolCallStatus.SUCCESS,
        duration_ms=42,
    )
    assert (call.tool_name, call.arguments, call.result, call.duration_ms) == (
        "web_search",
        {"q": "restaurants Lisbon"},
        {"hits": 3},
        42,
    )
    second = await rs.add_step(trace.id, thought="Pick one", action="choose", observation="Tasca")

    full = await rs.get_trace_with_steps(trace.id)
    assert full is not None
    assert [(s.id, s.thought, s.action, s.observation) for s in full.steps] == [
        (first.id, "Need options", "search", "3 found"),
        (second.id, "Pick one", "choose", "Tasca"),
    ]
    (stored_call,) = full.steps[0].tool_calls
    assert (stored_call.id, stored_call.tool_name, stored_call.arguments, stored_call.result) == (
        call.id,
        "web_search",
        {"q": "restaurants Lisbon"},
        {"hits": 3},
    )
    assert (stored_call.status.value, stored_call.duration_ms) == ("success", 42)
    assert full.steps[1].tool_calls == []
    (session,) = await rs.get_session_traces(conv)
    assert [s.id for s in session.steps] == [first.id, second.id]


async def test_cypher_query_reads_rows_and_refuses_writes(sdk: MemoryClient) -> None:
    lt = cast(NamsLongTermMemory, sdk.long_term)
    await lt.add_entity("Quetzal Query", "CONCEPT", description="for the cypher test")
    rows = await sdk.query.cypher(
        "MATCH (e:Concept {name: $name}) RETURN e.name AS name, e.description AS about",
        {"name": "Quetzal Query"},
    )
    assert rows == [{"name": "Quetzal Query", "about": "for the cypher test"}]
    # The SDK's own keyword check lets CALL through; the server refuses it (400).
    with pytest.raises(ValidationError):
        await sdk.query.cypher("CALL db.labels()")
    # The client stays usable after the refusal.
    assert isinstance(await sdk.short_term.list_conversations(limit=1), list)


async def test_api_key_management(sdk: MemoryClient, served: ServeProcess) -> None:
    auth = sdk.auth
    created = await auth.create_api_key("sdk-ci", scopes=["memory"])
    assert created.key and created.key.startswith("nams_") and created.label == "sdk-ci"
    listed = await auth.list_api_keys("ignored-workspace")
    assert created.id in [k.id for k in listed] and all(k.key is None for k in listed)
    revealed = await auth.reveal_api_key(created.id, "ignored-workspace")
    assert revealed.key == created.key

    # The minted key is a working SDK credential onto the same workspace.
    conv = await sdk.short_term.create_conversation("s4", user_identifier="key-user")
    async with MemoryClient(_settings(served, created.key)) as minted:
        seen = await minted.short_term.list_conversations(user_identifier="key-user")
        assert [c.id for c in seen] == [conv.id]

    rotated = await auth.rotate_api_key(created.id)
    assert rotated.key and rotated.key != created.key
    await _refused(_settings(served, created.key))
    async with MemoryClient(_settings(served, rotated.key)) as fresh:
        assert [
            c.id for c in await fresh.short_term.list_conversations(user_identifier="key-user")
        ] == [conv.id]
    await auth.revoke_api_key(rotated.id)
    await _refused(_settings(served, rotated.key))


async def test_wrong_key_fails_at_connect(served: ServeProcess) -> None:
    refused = await _refused(_settings(served, "nams_wrong"))
    assert "401" in str(refused)
