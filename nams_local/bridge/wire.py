"""Response shapes of the TCK bridge: engine models → the exact snake_case JSON it parses.

Every function returns plain JSON values, so nothing here depends on how pydantic would
serialise a model: timestamps are written by ``stamp`` (aware UTC, ``+00:00``, 6 digits —
never ``Z``), collections are never ``null``, a tool call always carries ``status``, and
``embedding`` is always ``null`` (no client needs the vectors back).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from nams_local.models import (
    Entity,
    EntityGraph,
    EntityHistory,
    Message,
    Observation,
    ReasoningStep,
    Reflection,
    Relationship,
    ToolCall,
)

if TYPE_CHECKING:
    from backends.sqlite.legacy.models import (
        Fact,
        Preference,
        SessionInfo,
        SessionTranscript,
        ToolStats,
        Trace,
        TraceStep,
        TraceToolCall,
    )

__all__ = [
    "JSON",
    "agent_step",
    "agent_tool_call",
    "conversation",
    "entity",
    "entity_graph",
    "entity_history",
    "fact",
    "message",
    "observation",
    "preference",
    "reflection",
    "relationship",
    "session_info",
    "stamp",
    "tool_stats",
    "trace",
    "trace_step",
    "trace_tool_call",
]

JSON = dict[str, Any]


def stamp(value: datetime | None) -> str | None:
    """``2026-03-21T10:00:00.123456+00:00``: aware UTC (naive is read as UTC)."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def message(m: Message) -> JSON:
    return {
        "id": m.id,
        "role": m.role,
        "content": m.content,
        "timestamp": stamp(m.created_at) or _now(),
        "embedding": None,
        "metadata": dict(m.metadata),
    }


def conversation(t: SessionTranscript, workspace: str) -> JSON:
    """A Conversation; ``user_id``, ``workspace_id`` and ``metadata`` are the Platinum
    extras (the client ignores them, Platinum SPEC-5.1.1 asks for them)."""
    return {
        "id": t.conversation_id,
        "session_id": t.session_id,
        "messages": [message(m) for m in t.messages],
        "title": None,
        "created_at": stamp(t.created_at),
        "updated_at": stamp(t.updated_at),
        "user_id": t.user_id,
        "workspace_id": workspace,
        "metadata": dict(t.metadata),
    }


def session_info(i: SessionInfo) -> JSON:
    return {
        "session_id": i.session_id,
        "message_count": i.message_count,
        "created_at": stamp(i.created_at),
        "updated_at": stamp(i.updated_at),
    }


def entity(e: Entity) -> JSON:
    return {
        "id": e.id,
        "name": e.name,
        "type": e.type,
        "subtype": None,
        "description": e.description,
        "embedding": None,
        "canonical_name": e.canonical_name,
        "created_at": stamp(e.created_at) or _now(),
    }


def preference(p: Preference) -> JSON:
    return {
        "id": p.id,
        "category": p.category,
        "preference": p.preference,
        "context": p.context,
        "embedding": None,
    }


def fact(f: Fact) -> JSON:
    return {
        "id": f.id,
        "subject": f.subject,
        "predicate": f.predicate,
        "object": f.object,
        "embedding": None,
    }


def relationship(r: Relationship) -> JSON:
    return {
        "id": r.id,
        "source_id": r.source_id,
        "target_id": r.target_id,
        "relationship_type": r.type,
        "properties": dict(r.properties),
    }


def trace_tool_call(c: TraceToolCall) -> JSON:
    return {
        "id": c.id,
        "tool_name": c.tool_name,
        "arguments": dict(c.arguments),
        "result": c.result,
        "status": c.status.value,
        "duration_ms": c.duration_ms,
        "error": c.error,
    }


def trace_step(s: TraceStep) -> JSON:
    return {
        "id": s.id,
        "trace_id": s.trace_id,
        "step_number": s.step_number,
        "thought": s.thought,
        "action": s.action,
        "observation": s.observation,
        "tool_calls": [trace_tool_call(c) for c in s.tool_calls],
    }


def trace(t: Trace) -> JSON:
    return {
        "id": t.id,
        "session_id": t.session_id,
        "task": t.task,
        "steps": [trace_step(s) for s in t.steps],
        "outcome": t.outcome,
        "success": t.success,
        "started_at": stamp(t.started_at),
        "completed_at": stamp(t.completed_at),
    }


def tool_stats(s: ToolStats) -> JSON:
    return {
        "name": s.name,
        "total_calls": s.total_calls,
        "successful_calls": s.successful_calls,
        "failed_calls": s.failed_calls,
        "success_rate": s.success_rate,
        "avg_duration_ms": s.avg_duration_ms,
    }


def observation(o: Observation) -> JSON:
    return {
        "id": o.id,
        "conversation_id": o.conversation_id,
        "content": o.content,
        "window_start": None,
        "window_end": None,
        "created_at": stamp(o.created_at) or _now(),
    }


def reflection(r: Reflection) -> JSON:
    return {
        "id": r.id,
        "conversation_id": r.conversation_id,
        "content": r.content,
        "created_at": stamp(r.created_at) or _now(),
    }


def agent_step(s: ReasoningStep, conversation_id: str) -> JSON:
    return {
        "id": s.id,
        "conversation_id": s.conversation_id or conversation_id,
        "reasoning": s.reasoning,
        "action_taken": s.action_taken,
        "result": s.result,
        "created_at": stamp(s.created_at) or _now(),
    }


def _decoded(text: str | None) -> Any:
    """Engine tool calls keep input/output as JSON text: give back the JSON value, or the
    text itself when it is not JSON."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def agent_tool_call(c: ToolCall) -> JSON:
    """An engine (Platinum) tool call in the bridge's ToolCall shape."""
    arguments = _decoded(c.input)
    return {
        "id": c.id,
        "tool_name": c.tool_name,
        "arguments": arguments if isinstance(arguments, Mapping) else {"input": arguments},
        "result": _decoded(c.output),
        "status": c.status.value,
        "duration_ms": c.duration_ms,
        "error": None,
    }


def entity_history(h: EntityHistory) -> JSON:
    return {
        "entity_id": h.entity_id,
        "mentions": [
            {
                "conversation_id": m.conversation_id,
                "message_id": m.message_id,
                "content": m.content,
                "timestamp": stamp(m.created_at) or _now(),
            }
            for m in h.mentions
        ],
    }


def entity_graph(g: EntityGraph) -> JSON:
    """Nodes and the edges between them (an edge whose end is not a node is left out)."""
    nodes = [{"id": n.id, "name": n.name, "type": n.type} for n in g.nodes]
    ids = {n["id"] for n in nodes}
    edges = [
        {"id": x.id, "source": x.source, "target": x.target, "type": x.type}
        for x in g.edges
        if x.source in ids and x.target in ids
    ]
    return {"nodes": nodes, "edges": edges}
