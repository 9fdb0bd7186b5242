"""Response bodies: the models' camelCase JSON plus what hosted clients expect beyond it.

``NamsModel.to_wire()`` does most of the work. The few places where the hosted wire and
our models differ are shaped here, each for a named client:

- relationship items carry the spec's ``relType`` next to our ``type`` (TS SDK spelling);
- conversations carry the ``workspaceId`` the caller sees, not the engine's name for it;
- trace steps also nest their ``toolCalls`` (the spec text promises nesting, its schema is
  flat; both are sent);
- extraction status also carries ``messages`` and a ``summary`` of counts by status, the
  fields the official Python SDK reads.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from nams_local.models import (
    Conversation,
    ConversationTrace,
    EntityDetails,
    EntityRelationship,
    ExtractionStatus,
)

from .auth import Principal

__all__ = [
    "conversation_wire",
    "entity_details_wire",
    "extraction_status_wire",
    "relationship_item_wire",
    "status",
    "trace_wire",
]


def status(word: str) -> dict[str, str]:
    """The hosted ``StatusResponse`` with the route's word (``deleted``, ``updated`` …)."""
    return {"status": word}


def conversation_wire(conversation: Conversation, principal: Principal) -> dict[str, Any]:
    return {**conversation.to_wire(), "workspaceId": principal.workspace_id}


def relationship_item_wire(relationship: EntityRelationship) -> dict[str, Any]:
    return {**relationship.to_wire(), "relType": relationship.type}


def entity_details_wire(entity: EntityDetails) -> dict[str, Any]:
    wire = entity.to_wire()
    wire["relationships"] = [relationship_item_wire(r) for r in entity.relationships]
    return wire


def trace_wire(trace: ConversationTrace) -> dict[str, Any]:
    wire = trace.to_wire()
    calls = wire.get("toolCalls", [])
    for step in wire.get("steps", []):
        step["toolCalls"] = [call for call in calls if call.get("stepId") == step["id"]]
    return wire


def extraction_status_wire(extraction: ExtractionStatus) -> dict[str, Any]:
    wire = extraction.to_wire()
    units = wire.get("units", [])
    wire["messages"] = units
    wire["summary"] = dict(Counter(unit["status"] for unit in units))
    return wire
