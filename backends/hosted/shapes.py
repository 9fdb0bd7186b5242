"""Readers for the answers the hosted spec leaves free-form.

Entity history mentions, graph nodes and edges, provenance steps and extraction status are
"object (free-form)" in the hosted spec: no field names are promised. These readers accept
the names a graph service plausibly uses (``messageId`` or ``id``, ``source`` or
``sourceId`` or ``startNode`` ...), in either casing, and fall back to defaults for whatever
is missing, so a shape we did not foresee degrades to emptier models instead of an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nams_local.models import (
    ConversationTrace,
    EntityGraph,
    EntityHistory,
    EntityMention,
    EntityProvenance,
    ExtractionStatus,
    ExtractionUnit,
    GraphEdge,
    GraphNode,
    StepExplanation,
    ToolCall,
)

from .parse import envelope, first, lenient, lenient_list

__all__ = [
    "read_extraction_status",
    "read_graph",
    "read_history",
    "read_provenance",
    "read_trace",
]

_MENTION = {
    "message_id": ("messageId", "msgId", "msg_id", "id"),
    "conversation_id": ("conversationId", "sessionId", "session_id"),
    "content": ("text", "body"),
    "created_at": ("createdAt", "timestamp"),
    "matched_name": ("matchedName",),
}
_NODE = {
    "id": ("elementId", "element_id", "entityId", "entity_id"),
    "name": ("label", "caption", "title"),
    "type": ("entityType", "entity_type", "kind"),
}
_EDGE = {
    "id": ("elementId", "element_id", "relationshipId", "relationship_id"),
    "source": ("sourceId", "source_id", "from", "start", "startNode", "startNodeId", "src"),
    "target": ("targetId", "target_id", "to", "end", "endNode", "endNodeId", "dst"),
    "type": ("relType", "rel_type", "relationship", "label"),
}
_STEP = {
    "id": ("stepId", "step_id"),
    "action_taken": ("actionTaken", "action"),
}
_UNIT = {
    "message_id": ("messageId", "msgId", "unitId", "unit_id", "id"),
    "status": ("state",),
    "attempts": ("attemptCount", "attempt_count", "tries"),
    "last_run": ("lastRun", "lastRunAt", "last_run_at", "updatedAt", "updated_at"),
    "error": ("lastError", "last_error", "errorMessage", "error_message"),
}


def read_history(body: object, entity_id: str) -> EntityHistory:
    mentions = lenient_list(EntityMention, envelope(body, "mentions", "messages"), _MENTION)
    return EntityHistory(
        entity_id=str(first(body, "entity_id", default=entity_id)), mentions=mentions
    )


def _node(raw: Mapping[str, Any]) -> GraphNode:
    labels = raw.get("labels")
    label = labels[0] if isinstance(labels, list) and labels else None
    return lenient(GraphNode, raw, _NODE, type=label)


def _edge(raw: Mapping[str, Any]) -> GraphEdge:
    edge = lenient(GraphEdge, raw, _EDGE)
    if not edge.id:
        edge.id = f"{edge.source}-{edge.type}-{edge.target}"
    return edge


def read_graph(body: object) -> EntityGraph:
    nodes = [_node(raw) for raw in envelope(body, "nodes", "entities")]
    edges = [_edge(raw) for raw in envelope(body, "edges", "relationships", "links")]
    return EntityGraph(nodes=nodes, edges=edges)


def read_provenance(body: object, entity_id: str) -> EntityProvenance:
    steps = lenient_list(StepExplanation, envelope(body, "steps"), _STEP)
    return EntityProvenance(entity_id=str(first(body, "entity_id", default=entity_id)), steps=steps)


def read_trace(body: object, conversation_id: str) -> ConversationTrace:
    """The flat hosted trace; tool calls nested under their steps are accepted too."""
    trace = lenient(ConversationTrace, body, conversation_id=conversation_id)
    if not trace.tool_calls:
        for raw in envelope(body, "steps"):
            step_id = first(raw, "id", "step_id")
            for call in envelope(raw, "tool_calls"):
                trace.tool_calls.append(lenient(ToolCall, call, step_id=step_id))
    return trace


def read_extraction_status(body: object, conversation_id: str) -> ExtractionStatus:
    """Per-message extraction units, as a list or as a map from message id to unit."""
    raw_units: list[Mapping[str, Any]] = envelope(
        body, "units", "messages", "extractions", "statuses"
    )
    if not raw_units and isinstance(body, Mapping):
        raw_units = [
            {"messageId": key, **value}
            for key, value in body.items()
            if isinstance(value, Mapping) and ("status" in value or "state" in value)
        ]
    units = [lenient(ExtractionUnit, raw, _UNIT, status="unknown") for raw in raw_units]
    return ExtractionStatus(
        conversation_id=str(first(body, "conversation_id", default=conversation_id)),
        units=units,
    )
