"""Capability probing and the extension methods it guards.

Hosted NAMS has no ``/capabilities`` route and none of the extensions; the local server
answers the probe. An extension whose capability is off raises ``NotSupportedError``
without any request beyond the one-time probe.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from backends.hosted import HOSTED_CAPABILITIES, HostedBackend
from nams_local.backend import Capabilities
from nams_local.errors import (
    AuthenticationError,
    BackendUnavailableError,
    InvalidInputError,
    NotSupportedError,
)
from nams_local.models import MetadataValue, NewMessage

from .scripted_server import Reply, ScriptedServer

ALL_ON = {
    "relationshipWrites": True,
    "entityByName": True,
    "userMessageSearch": True,
    "graphNeighbourhood": True,
    "vectorSearch": True,
    "cypherQuery": True,
    "searchModes": True,
}


def client(server: ScriptedServer) -> HostedBackend:
    return HostedBackend("k", endpoint=f"{server.url}/v1", max_retries=0)


async def test_defaults_before_probing_are_hosted_nams(server: ScriptedServer) -> None:
    async with client(server) as backend:
        assert backend.capabilities == HOSTED_CAPABILITIES
        assert Capabilities(vector_search=True, cypher_query=True) == HOSTED_CAPABILITIES
        assert backend.search_modes is False
    assert server.received == []


async def test_probe_reads_the_flags_once(server: ScriptedServer) -> None:
    server.script("GET", "/v1/capabilities", Reply(200, {**ALL_ON, "cypherQuery": False}))

    async with client(server) as backend:
        first = await backend.probe_capabilities()
        second = await backend.probe_capabilities()

        assert first == second == backend.capabilities
        assert first == Capabilities(
            relationship_writes=True,
            entity_by_name=True,
            user_message_search=True,
            graph_neighbourhood=True,
            vector_search=True,
            cypher_query=False,
        )
        assert backend.search_modes is True
    assert len(server.requests_to("GET", "/v1/capabilities")) == 1


async def test_probe_accepts_snake_case_and_ignores_non_booleans(server: ScriptedServer) -> None:
    server.script(
        "GET",
        "/v1/capabilities",
        Reply(200, {"entity_by_name": True, "vector_search": "yes", "extra": 1}),
    )

    async with client(server) as backend:
        assert await backend.probe_capabilities() == Capabilities(entity_by_name=True)


@pytest.mark.parametrize(
    "reply",
    [
        Reply(404, {"error": "Not found"}),
        Reply(405, {"error": "method"}),
        Reply(200, b"<html>not json</html>"),
        Reply(200, ["not", "an", "object"]),
    ],
    ids=["404", "405", "html", "list"],
)
async def test_no_capabilities_route_means_hosted_defaults(
    server: ScriptedServer, reply: Reply
) -> None:
    server.script("GET", "/v1/capabilities", reply)

    async with client(server) as backend:
        assert await backend.probe_capabilities() == HOSTED_CAPABILITIES
        assert await backend.probe_capabilities() == HOSTED_CAPABILITIES
    assert len(server.requests_to("GET", "/v1/capabilities")) == 1


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (Reply(401, {"error": "bad key"}), AuthenticationError),
        (Reply(503, {"error": "down"}), BackendUnavailableError),
    ],
)
async def test_failed_probe_raises_and_is_not_cached(
    server: ScriptedServer, reply: Reply, error: type[Exception]
) -> None:
    server.script("GET", "/v1/capabilities", reply, Reply(200, ALL_ON))

    async with client(server) as backend:
        with pytest.raises(error):
            await backend.probe_capabilities()
        assert backend.capabilities == HOSTED_CAPABILITIES
        assert (await backend.probe_capabilities()).relationship_writes is True


async def test_known_capabilities_skip_the_probe(server: ScriptedServer) -> None:
    server.script("GET", "/v1/capabilities", Reply(200, ALL_ON))
    async with client(server) as first:
        await first.probe_capabilities()
        known = first.server_capabilities
    assert known is not None

    second = HostedBackend("other", endpoint=f"{server.url}/v1", capabilities=known)
    third = HostedBackend("third", endpoint=f"{server.url}/v1", capabilities=Capabilities())
    async with second, third:
        assert await second.probe_capabilities() == first.capabilities
        assert second.search_modes is True
        with pytest.raises(NotSupportedError):
            await third.get_entity_by_name("Alice")

    assert len(server.requests_to("GET", "/v1/capabilities")) == 1
    assert len(server.received) == 1


Extension = Callable[[HostedBackend], Awaitable[Any]]

EXTENSIONS: list[tuple[str, Extension]] = [
    ("add_relationship", lambda b: b.add_relationship("a", "b", "KNOWS")),
    ("delete_relationship", lambda b: b.delete_relationship("r")),
    ("get_entity_by_name", lambda b: b.get_entity_by_name("Alice")),
    ("entity_neighbourhood", lambda b: b.entity_neighbourhood("e", depth=2)),
    ("search_user_messages", lambda b: b.search_user_messages("u", "garden")),
]


@pytest.mark.parametrize("call", [pytest.param(c, id=n) for n, c in EXTENSIONS])
async def test_extension_without_capability_makes_no_request(
    server: ScriptedServer, call: Extension
) -> None:
    server.script("GET", "/v1/capabilities", Reply(404, {"error": "Not found"}))

    async with client(server) as backend:
        with pytest.raises(NotSupportedError):
            await call(backend)
        with pytest.raises(NotSupportedError):
            await call(backend)

    assert [(r.method, r.path) for r in server.received] == [("GET", "/v1/capabilities")]


async def test_extensions_with_capabilities_send_their_requests(server: ScriptedServer) -> None:
    server.script("GET", "/v1/capabilities", Reply(200, ALL_ON))
    server.script(
        "POST",
        "/v1/relationships",
        Reply(201, {"id": "r1", "sourceId": "a", "targetId": "b", "type": "KNOWS"}),
    )
    server.script("DELETE", "/v1/relationships/r1", Reply(200, {"status": "deleted"}))
    server.script(
        "GET",
        "/v1/entities/by-name",
        Reply(200, {"id": "e1", "name": "Alice", "type": "person"}),
        Reply(404, {"error": "Not found"}),
    )
    server.script(
        "GET",
        "/v1/entities/e1/neighbourhood",
        Reply(200, {"nodes": [{"id": "e1", "name": "Alice", "type": "person"}], "edges": []}),
    )
    server.script(
        "POST",
        "/v1/users/u%201/messages/search",
        Reply(
            200,
            {
                "conversations": [
                    {
                        "conversationId": "c1",
                        "messages": [{"id": "m1", "role": "user", "content": "garden"}],
                        "steps": [],
                        "searchType": "hybrid",
                    }
                ]
            },
        ),
    )

    async with client(server) as backend:
        relationship = await backend.add_relationship(
            "a", "b", "KNOWS", properties={"since": 2020}, confidence=0.5
        )
        await backend.delete_relationship("r1")
        found = await backend.get_entity_by_name("alice", type="person")
        missing = await backend.get_entity_by_name("nobody")
        hood = await backend.entity_neighbourhood("e1", depth=2)
        groups = await backend.search_user_messages(
            "u 1", "garden", conversation_limit=3, exclude_conversation_id="c0"
        )

    assert (relationship.id, relationship.properties, relationship.confidence) == (
        "r1",
        {"since": 2020},
        0.5,
    )
    assert found is not None and found.id == "e1"
    assert missing is None
    assert [n.id for n in hood.nodes] == ["e1"]
    assert [(g.conversation_id, g.search_type, [m.id for m in g.messages]) for g in groups] == [
        ("c1", "hybrid", ["m1"])
    ]
    sent = [(r.method, r.path, r.query, r.json()) for r in server.received[1:]]
    assert sent == [
        (
            "POST",
            "/v1/relationships",
            {},
            {
                "sourceId": "a",
                "targetId": "b",
                "type": "KNOWS",
                "properties": {"since": 2020},
                "confidence": 0.5,
            },
        ),
        ("DELETE", "/v1/relationships/r1", {}, None),
        ("GET", "/v1/entities/by-name", {"name": ["alice"], "type": ["person"]}, None),
        ("GET", "/v1/entities/by-name", {"name": ["nobody"]}, None),
        ("GET", "/v1/entities/e1/neighbourhood", {"depth": ["2"]}, None),
        (
            "POST",
            "/v1/users/u%201/messages/search",
            {},
            {
                "query": "garden",
                "conversationLimit": 3,
                "perConversationLimit": 4,
                "excludeConversationId": "c0",
                "includeSteps": True,
            },
        ),
    ]


async def test_hosted_never_receives_fields_outside_its_spec(
    server: ScriptedServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Hosted NAMS rejects unknown fields: metadata is dropped (one warning), mode refused."""
    server.script("GET", "/v1/capabilities", Reply(404, {"error": "not found"}))
    added = {"id": "m1", "conversationId": "c1", "role": "user", "content": "hi"}
    server.script("POST", "/v1/conversations/c1/messages", Reply(201, added))
    server.script("POST", "/v1/conversations/c1/messages/bulk", Reply(201, {"messages": [added]}))
    async with client(server) as backend:
        await backend.add_message("c1", "user", "hi", {"namsKind": "audit"})
        await backend.add_messages("c1", [NewMessage(role="user", content="hi", metadata={"a": 1})])
        with pytest.raises(NotSupportedError, match="search mode"):
            await backend.search_messages("c1", "hi", mode="text")
        with pytest.raises(NotSupportedError, match="search mode"):
            await backend.search_entities("hi", mode="vector")
    bodies = [r.json() for r in server.received if r.method == "POST"]
    assert bodies == [
        {"role": "user", "content": "hi"},
        {"messages": [{"role": "user", "content": "hi"}]},
    ]
    assert [r.getMessage() for r in caplog.records if "metadata" in r.getMessage()] == [
        f"[nams] the server at {server.url}/v1 does not store message metadata; it is dropped"
    ]


async def test_the_local_server_gets_metadata_and_modes(server: ScriptedServer) -> None:
    server.script("GET", "/v1/capabilities", Reply(200, ALL_ON))
    added = {"id": "m1", "conversationId": "c1", "role": "user", "content": "hi"}
    server.script("POST", "/v1/conversations/c1/messages", Reply(201, added))
    server.script(
        "POST", "/v1/conversations/c1/search", Reply(200, {"messages": [], "searchType": "text"})
    )
    async with client(server) as backend:
        await backend.add_message("c1", "user", "hi", {"namsKind": "audit"})
        result = await backend.search_messages("c1", "hi", mode="text")
    assert result.search_type == "text"
    bodies = [r.json() for r in server.received if r.method == "POST"]
    assert bodies[0]["metadata"] == {"namsKind": "audit"}
    assert bodies[1]["mode"] == "text"


async def test_conversation_metadata_toward_hosted_is_unchanged(server: ScriptedServer) -> None:
    """Toward hosted NAMS (no extension fields) the client refuses non-string metadata
    before sending, as it always did; string maps go out without a probe (W1)."""
    server.script("GET", "/v1/capabilities", Reply(404, {"error": "not found"}))
    server.script("POST", "/v1/conversations", Reply(201, {"id": "c1", "metadata": {"k": "v"}}))
    async with client(server) as backend:
        created = await backend.create_conversation(metadata={"k": "v"})
        with pytest.raises(InvalidInputError, match="strings to strings"):
            await backend.create_conversation(metadata={"seq": 1})
        with pytest.raises(InvalidInputError, match="no objects or arrays"):
            await backend.create_conversation(metadata={"n": {"a": "b"}})  # type: ignore[dict-item]
    assert created.metadata == {"k": "v"}
    posts = [r.json() for r in server.received if r.method == "POST"]
    assert posts == [{"metadata": {"k": "v"}}]
    assert [r.path for r in server.received if r.method == "GET"] == ["/v1/capabilities"]


async def test_conversation_metadata_scalars_go_to_the_local_server(
    server: ScriptedServer,
) -> None:
    server.script("GET", "/v1/capabilities", Reply(200, ALL_ON))
    metadata: dict[str, MetadataValue] = {"source": "e2e", "seq": 1, "ok": True, "none": None}
    server.script("POST", "/v1/conversations", Reply(201, {"id": "c1", "metadata": metadata}))
    async with client(server) as backend:
        created = await backend.create_conversation(metadata=metadata)
    assert created.metadata == metadata
    assert [r.json() for r in server.received if r.method == "POST"] == [{"metadata": metadata}]
