"""What the hosted client puts on the wire, as the server received it: headers, query
strings (snake_case), JSON bodies (camelCase, no null keys), paths."""

from __future__ import annotations

import pytest

from backends.hosted import HostedBackend
from nams_local import __version__
from nams_local.models import NewMessage

from .scripted_server import Reply, ScriptedServer


def client(server: ScriptedServer, **options: str | None) -> HostedBackend:
    return HostedBackend("nams_secret", endpoint=f"{server.url}/v1", **options)  # type: ignore[arg-type]


async def test_headers_of_a_request_with_a_body(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMORY_WORKSPACE_ID", raising=False)
    server.script("POST", "/v1/conversations", Reply(201, {"id": "c1"}))

    async with client(server, workspace_id="ws-1") as backend:
        await backend.create_conversation(user_id="u1")

    (received,) = server.received
    assert received.headers["authorization"] == "Bearer nams_secret"
    assert received.headers["x-workspace-id"] == "ws-1"
    assert received.headers["user-agent"] == f"nams-local/{__version__} (+python httpx)"
    assert received.headers["content-type"] == "application/json"
    assert received.json() == {"userId": "u1"}


async def test_no_content_type_without_a_body(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMORY_WORKSPACE_ID", raising=False)
    server.script("GET", "/v1/entities", Reply(200, {"entities": []}))
    server.script("DELETE", "/v1/entities/e1", Reply(200, {"status": "deleted"}))

    async with client(server) as backend:
        await backend.list_entities()
        await backend.delete_entity("e1")

    for received in server.received:
        assert "content-type" not in received.headers
        assert received.body == b""
        assert received.headers["authorization"] == "Bearer nams_secret"
        assert "x-workspace-id" not in received.headers


async def test_workspace_falls_back_to_the_environment(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_WORKSPACE_ID", "ws-from-env")
    server.script("GET", "/v1/entities", Reply(200, {"entities": []}))

    async with client(server) as backend:
        assert backend.workspace_id == "ws-from-env"
        await backend.list_entities()
    async with client(server, workspace_id="explicit") as backend:
        await backend.list_entities()

    assert [r.headers["x-workspace-id"] for r in server.received] == ["ws-from-env", "explicit"]


async def test_query_strings_are_snake_case(server: ScriptedServer) -> None:
    server.script("GET", "/v1/conversations", Reply(200, {"conversations": []}))
    server.script("GET", "/v1/reasoning/steps", Reply(200, {"steps": []}))
    server.script("GET", "/v1/conversations/c1/messages", Reply(200, {"messages": []}))
    server.script("GET", "/v1/entities", Reply(200, {"entities": []}))

    async with client(server) as backend:
        await backend.list_conversations(user_id="u 1", limit=7)
        await backend.list_conversations()
        await backend.list_steps("c1")
        await backend.list_messages("c1", limit=3)
        await backend.list_entities(type="person")

    assert [r.query for r in server.received] == [
        {"user_id": ["u 1"], "limit": ["7"]},
        {"limit": ["50"]},
        {"conversation_id": ["c1"]},
        {"limit": ["3"]},
        {"type": ["person"]},
    ]


async def test_bodies_are_camel_case_without_null_keys(server: ScriptedServer) -> None:
    for path in (
        "/v1/conversations/c1/messages",
        "/v1/conversations/c1/messages/bulk",
        "/v1/conversations/c1/search",
        "/v1/entities",
        "/v1/entities/search",
        "/v1/entities/e1/merge",
        "/v1/reasoning/steps",
        "/v1/reasoning/tool-calls",
        "/v1/query",
    ):
        server.script("POST", path, Reply(201, {}))
    server.script("PUT", "/v1/entities/e1/feedback", Reply(200, {}))
    server.script("PUT", "/v1/entities/e1", Reply(200, {}))
    # A server that keeps metadata and runs search modes, so those fields are sent too.
    server.script("GET", "/v1/capabilities", Reply(200, {"searchModes": True}))

    async with client(server) as backend:
        await backend.add_message("c1", "user", "hi")
        await backend.add_message("c1", "user", "hi", {"k": None})
        await backend.add_messages(
            "c1",
            [
                NewMessage(role="user", content="a"),
                NewMessage(role="user", content="b", metadata={"n": 1}),
            ],
        )
        await backend.search_messages("c1", "q")
        await backend.search_messages("c1", "q", limit=3, mode="text")
        await backend.add_entity("Ada", "person")
        await backend.add_entity("Ada", "person", "Mathematician", {"born": "1815"})
        await backend.search_entities("Ada", type="person", limit=5, mode="vector")
        await backend.merge_entities("e1", "e2")
        await backend.record_step("c1", "why", "what")
        await backend.record_tool_call(
            "tool", "{}", status="completed", step_id="s1", duration_ms=5
        )
        await backend.record_tool_call("tool", "{}")
        await backend.query("MATCH (n) RETURN n", {"x": 1})
        await backend.entity_feedback("e1", user_score=0.5)
        await backend.update_entity("e1", description="new")

    sent = [r for r in server.received if r.path != "/v1/capabilities"]
    assert [(r.method, r.path, r.json()) for r in sent] == [
        ("POST", "/v1/conversations/c1/messages", {"role": "user", "content": "hi"}),
        (
            "POST",
            "/v1/conversations/c1/messages",
            {"role": "user", "content": "hi", "metadata": {"k": None}},
        ),
        (
            "POST",
            "/v1/conversations/c1/messages/bulk",
            {
                "messages": [
                    {"role": "user", "content": "a"},
                    {"role": "user", "content": "b", "metadata": {"n": 1}},
                ]
            },
        ),
        ("POST", "/v1/conversations/c1/search", {"query": "q", "limit": 10}),
        ("POST", "/v1/conversations/c1/search", {"query": "q", "limit": 3, "mode": "text"}),
        ("POST", "/v1/entities", {"name": "Ada", "type": "person"}),
        (
            "POST",
            "/v1/entities",
            {
                "name": "Ada",
                "type": "person",
                "description": "Mathematician",
                "properties": {"born": "1815"},
            },
        ),
        (
            "POST",
            "/v1/entities/search",
            {"query": "Ada", "type": "person", "limit": 5, "mode": "vector"},
        ),
        ("POST", "/v1/entities/e1/merge", {"targetId": "e2"}),
        (
            "POST",
            "/v1/reasoning/steps",
            {"conversationId": "c1", "reasoning": "why", "actionTaken": "what"},
        ),
        (
            "POST",
            "/v1/reasoning/tool-calls",
            {
                "toolName": "tool",
                "input": "{}",
                "status": "success",
                "stepId": "s1",
                "durationMs": 5,
            },
        ),
        ("POST", "/v1/reasoning/tool-calls", {"toolName": "tool", "input": "{}"}),
        ("POST", "/v1/query", {"cypher": "MATCH (n) RETURN n", "params": {"x": 1}}),
        ("PUT", "/v1/entities/e1/feedback", {"userScore": 0.5}),
        ("PUT", "/v1/entities/e1", {"description": "new"}),
    ]


async def test_ids_are_escaped_into_one_path_segment(server: ScriptedServer) -> None:
    server.script("GET", "/v1/conversations/a%2Fb%3Fc", Reply(200, {"id": "a/b?c"}))

    async with client(server) as backend:
        got = await backend.get_conversation("a/b?c")

    assert got.id == "a/b?c"
    assert [r.path for r in server.received] == ["/v1/conversations/a%2Fb%3Fc"]
