"""Hosted answers are read leniently: either casing, nulls, surprises in the free-form
shapes (history, graph, provenance, extraction status) degrade to defaults, never crash."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from backends.hosted import HostedBackend
from backends.hosted.parse import lenient
from nams_local.models import Message, ToolCallStatus

from .scripted_server import Reply, ScriptedServer


def client(server: ScriptedServer) -> HostedBackend:
    return HostedBackend("k", endpoint=f"{server.url}/v1", max_retries=0)


async def test_snake_case_answers_and_envelopes(server: ScriptedServer) -> None:
    server.script(
        "GET",
        "/v1/conversations",
        Reply(
            200,
            {
                "conversations": [
                    {
                        "id": "c1",
                        "user_id": "u",
                        "message_count": 2,
                        "created_at": "2026-01-02T03:04:05Z",
                        "metadata": None,
                    },
                    "not an object",
                ]
            },
        ),
    )
    server.script(
        "GET",
        "/v1/conversations/c1/context",
        Reply(
            200,
            {
                "recent_messages": [
                    {"id": "m1", "role": "user", "content": "hi", "token_count": 1}
                ],
                "observations": [{"id": "o1", "content": "an observation"}],
                "reflections": None,
            },
        ),
    )

    async with client(server) as backend:
        (conversation,) = await backend.list_conversations()
        context = await backend.get_context("c1")

    assert (conversation.id, conversation.user_id, conversation.message_count) == ("c1", "u", 2)
    assert conversation.created_at == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert conversation.metadata == {}
    assert [(m.id, m.conversation_id, m.token_count) for m in context.recent_messages] == [
        ("m1", "c1", 1)
    ]
    assert [(o.id, o.conversation_id) for o in context.observations] == [("o1", "c1")]
    assert context.reflections == []


async def test_hosted_add_answer_is_completed_from_the_request(server: ScriptedServer) -> None:
    """Hosted answers ``{id, conversationId, role, content}``: metadata comes from the request."""
    server.script(
        "POST",
        "/v1/conversations/c1/messages",
        Reply(201, {"id": "m1", "conversationId": "c1", "role": "user", "content": "hi"}),
    )
    server.script(
        "POST",
        "/v1/entities",
        Reply(201, {"id": "e1", "name": "Ada", "type": "person", "description": ""}),
    )
    server.script(
        "POST",
        "/v1/reasoning/tool-calls",
        Reply(201, {"id": "t1", "stepId": "s1", "toolName": "search", "status": "completed"}),
    )

    async with client(server) as backend:
        message = await backend.add_message("c1", "user", "hi", {"turn": 3})
        entity = await backend.add_entity("Ada", "person", properties={"born": "1815"})
        call = await backend.record_tool_call("search", '{"q": 1}', '{"r": 2}', step_id="s1")

    # hosted NAMS keeps no message metadata, so none is sent and none is claimed
    assert (message.id, message.metadata, message.conversation_id) == ("m1", {}, "c1")
    assert (entity.id, entity.properties, entity.description) == ("e1", {"born": "1815"}, "")
    assert (call.id, call.input, call.output, call.status) == (
        "t1",
        '{"q": 1}',
        '{"r": 2}',
        ToolCallStatus.SUCCESS,
    )


async def test_free_form_history_mentions(server: ScriptedServer) -> None:
    server.script(
        "GET",
        "/v1/entities/e1/history",
        Reply(
            200,
            {
                "mentions": [
                    {
                        "messageId": "m1",
                        "conversationId": "c1",
                        "content": "Ada wrote notes",
                        "createdAt": "2026-01-01T00:00:00Z",
                    },
                    {"id": "m2", "session_id": "c2", "text": "about Ada", "createdAt": ""},
                    {"unexpected": True},
                    42,
                ]
            },
        ),
    )

    async with client(server) as backend:
        history = await backend.get_entity_history("e1")

    assert history.entity_id == "e1"
    assert [(m.message_id, m.conversation_id, m.content) for m in history.mentions] == [
        ("m1", "c1", "Ada wrote notes"),
        ("m2", "c2", "about Ada"),
        ("", "", ""),
    ]
    assert history.mentions[0].created_at is not None
    assert history.mentions[1].created_at is None


async def test_free_form_graph(server: ScriptedServer) -> None:
    server.script(
        "GET",
        "/v1/entities/graph",
        Reply(
            200,
            {
                "nodes": [
                    {"id": "a", "name": "Alice", "type": "person", "description": "x"},
                    {"elementId": 7, "caption": "Acme", "labels": ["Organization"]},
                    {},
                ],
                "edges": [
                    {
                        "id": "r1",
                        "source": "a",
                        "target": "7",
                        "type": "WORKS_AT",
                        "confidence": 0.9,
                    },
                    {"from": "a", "to": "7", "relType": "KNOWS", "properties": {"since": 1}},
                    {"startNode": "7", "endNode": "a", "label": "EMPLOYS", "confidence": "high"},
                ],
            },
        ),
    )

    async with client(server) as backend:
        graph = await backend.get_graph()

    assert [(n.id, n.name, n.type) for n in graph.nodes] == [
        ("a", "Alice", "person"),
        ("7", "Acme", "Organization"),
        ("", "", ""),
    ]
    assert [(e.id, e.source, e.target, e.type, e.confidence) for e in graph.edges] == [
        ("r1", "a", "7", "WORKS_AT", 0.9),
        ("a-KNOWS-7", "a", "7", "KNOWS", None),
        ("7-EMPLOYS-a", "7", "a", "EMPLOYS", None),
    ]
    assert graph.edges[1].properties == {"since": 1}


@pytest.mark.parametrize("body", [{}, {"nodes": None, "edges": "oops"}, [], None])
async def test_empty_or_broken_graph_is_empty(server: ScriptedServer, body: object) -> None:
    server.script("GET", "/v1/entities/graph", Reply(200, body if body is not None else b""))

    async with client(server) as backend:
        graph = await backend.get_graph()

    assert (graph.nodes, graph.edges) == ([], [])


async def test_free_form_provenance_steps(server: ScriptedServer) -> None:
    server.script(
        "GET",
        "/v1/reasoning/provenance/e1",
        Reply(
            200,
            {
                "entityId": "e1",
                "steps": [
                    {
                        "id": "s1",
                        "reasoning": "why",
                        "actionTaken": "search",
                        "toolCalls": [{"id": "t1", "toolName": "web", "status": "failed"}, {}],
                    },
                    {"stepId": "s2", "action": "answer"},
                ],
            },
        ),
    )

    async with client(server) as backend:
        provenance = await backend.get_provenance("e1")

    assert provenance.entity_id == "e1"
    assert [(s.id, s.reasoning, s.action_taken) for s in provenance.steps] == [
        ("s1", "why", "search"),
        ("s2", "", "answer"),
    ]
    assert [(c.id, c.tool_name, c.status) for c in provenance.steps[0].tool_calls] == [
        ("t1", "web", ToolCallStatus.FAILURE),
        ("", "", ToolCallStatus.SUCCESS),
    ]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            {
                "conversationId": "c1",
                "units": [
                    {
                        "messageId": "m1",
                        "status": "done",
                        "attempts": 1,
                        "lastRun": "2026-01-01T00:00:00Z",
                    },
                    {"message_id": "m2", "state": "failed", "error": "timeout", "attempts": "x"},
                ],
            },
            [("m1", "done", 1, None), ("m2", "failed", 0, "timeout")],
        ),
        (
            {"messages": [{"id": "m1"}]},
            [("m1", "unknown", 0, None)],
        ),
        (
            {"m1": {"status": "pending", "attempts": 2}, "summary": "1 pending"},
            [("m1", "pending", 2, None)],
        ),
        ({"status": "idle"}, []),
        ([], []),
    ],
    ids=["units", "messages", "map", "summary-only", "list"],
)
async def test_free_form_extraction_status(
    server: ScriptedServer, body: object, expected: list[tuple[str, str, int, str | None]]
) -> None:
    server.script("GET", "/v1/conversations/c1/extraction-status", Reply(200, body))

    async with client(server) as backend:
        status = await backend.get_extraction_status("c1")

    assert status.conversation_id == "c1"
    assert [(u.message_id, u.status, u.attempts, u.error) for u in status.units] == expected


async def test_trace_with_tool_calls_nested_under_steps(server: ScriptedServer) -> None:
    server.script(
        "GET",
        "/v1/reasoning/trace/c1",
        Reply(
            200,
            {
                "steps": [
                    {
                        "id": "s1",
                        "reasoning": "r",
                        "actionTaken": "a",
                        "toolCalls": [{"id": "t1", "toolName": "x"}],
                    }
                ]
            },
        ),
    )

    async with client(server) as backend:
        trace = await backend.get_trace("c1")

    assert trace.conversation_id == "c1"
    assert [s.id for s in trace.steps] == ["s1"]
    assert [(c.id, c.step_id) for c in trace.tool_calls] == [("t1", "s1")]


async def test_search_type_and_scores(server: ScriptedServer) -> None:
    server.script(
        "POST",
        "/v1/conversations/c1/search",
        Reply(
            200,
            {
                "messages": [{"id": "m1", "role": "user", "content": "x", "score": 0.5}],
                "search_type": "vector",
            },
        ),
    )
    server.script("POST", "/v1/entities/search", Reply(200, {"entities": []}))

    async with client(server) as backend:
        messages = await backend.search_messages("c1", "x")
        entities = await backend.search_entities("x")

    assert messages.search_type == "vector"
    assert [(m.id, m.score, m.conversation_id) for m in messages.items] == [("m1", 0.5, "c1")]
    assert entities.search_type == "text"
    assert entities.items == []


def test_lenient_repairs_required_and_optional_fields() -> None:
    message = lenient(
        Message,
        {
            "id": 12,
            "role": None,
            "content": ["not", "text"],
            "createdAt": "yesterday",
            "score": "x",
        },
    )

    assert (message.id, message.role, message.content) == ("12", "", "")
    assert (message.created_at, message.score, message.metadata) == (None, None, {})
