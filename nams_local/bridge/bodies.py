"""Request bodies of the TCK bridge, one model per method, keys exactly as the client sends.

Strict types: a wrong JSON type is a 400, never coerced (``"5"`` is not a limit, ``1`` is
not ``true``). A key that is absent takes the method's default; falsy values that are sent
(``0.0``, ``false``, ``{}``, ``""``) are kept. Unknown keys are ignored, as the protocol
asks, so newer clients keep working.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AddEntity",
    "AddFact",
    "AddMessage",
    "AddPreference",
    "AddRelationship",
    "AddStep",
    "BulkAddMessages",
    "BulkMessage",
    "CompleteTrace",
    "ConversationId",
    "CreateConversation",
    "CypherQuery",
    "Empty",
    "EntityId",
    "GetConversation",
    "GetObservations",
    "GetRelatedEntities",
    "GetSimilarTraces",
    "GetToolStats",
    "Limit",
    "ListEntities",
    "ListSessions",
    "ListTraces",
    "MergeDuplicates",
    "MergeEntities",
    "MessageId",
    "Name",
    "RecordStep",
    "RecordToolCall",
    "SearchEntities",
    "SearchMessages",
    "SearchPreferences",
    "SessionId",
    "SetEntityFeedback",
    "StartTrace",
    "StepId",
    "ToolStatus",
    "TraceId",
    "UpdateEntity",
]


#: The six tool-call statuses, exactly (anything else is a 400).
ToolStatus = Literal["pending", "success", "failure", "error", "timeout", "cancelled"]


class Body(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


class Empty(Body):
    """``setup``, ``teardown``, ``clear_all_data``, ``get_entity_graph``."""


# -- Bronze ---------------------------------------------------------------------------
class AddMessage(Body):
    session_id: str
    role: str
    content: str
    metadata: dict[str, Any] | None = None


class GetConversation(Body):
    session_id: str
    limit: int | None = None


class SearchMessages(Body):
    query: str
    session_id: str | None = None
    limit: int = 10
    threshold: float = 0.7


class ListSessions(Body):
    limit: int = 100


class MessageId(Body):
    message_id: str


class SessionId(Body):
    session_id: str


# -- Silver: long-term ------------------------------------------------------------------
class AddEntity(Body):
    name: str
    entity_type: str
    description: str | None = None


class AddPreference(Body):
    category: str
    preference: str
    context: str | None = None


class AddFact(Body):
    subject: str
    predicate: str
    obj: str


class SearchEntities(Body):
    query: str
    limit: int = 10


class SearchPreferences(Body):
    query: str
    category: str | None = None
    limit: int = 10


class Name(Body):
    name: str


class GetRelatedEntities(Body):
    entity_id: str
    relationship_type: str | None = None
    depth: int = 1


# -- Silver: reasoning ------------------------------------------------------------------
class StartTrace(Body):
    session_id: str
    task: str


class AddStep(Body):
    trace_id: str
    thought: str | None = None
    action: str | None = None
    observation: str | None = None


class RecordToolCall(Body):
    step_id: str
    tool_name: str
    arguments: dict[str, Any]
    result: Any = None
    status: ToolStatus = "success"
    duration_ms: int | None = None
    error: str | None = None


class CompleteTrace(Body):
    trace_id: str
    outcome: str | None = None
    success: bool | None = None


class TraceId(Body):
    trace_id: str


class ListTraces(Body):
    session_id: str | None = None
    limit: int = 100


class GetToolStats(Body):
    tool_name: str | None = None


# -- Gold -------------------------------------------------------------------------------
class AddRelationship(Body):
    source_id: str
    target_id: str
    relationship_type: str
    properties: dict[str, Any] | None = None


class MergeDuplicates(Body):
    source_id: str
    target_id: str
    canonical_name: str | None = None


class GetSimilarTraces(Body):
    task: str
    limit: int = 5
    success_only: bool = True


# -- Platinum ---------------------------------------------------------------------------
class CreateConversation(Body):
    user_id: str | None = None
    metadata: dict[str, Any] | None = None


class Limit(Body):
    limit: int | None = None


class ConversationId(Body):
    conversation_id: str


class BulkMessage(Body):
    role: str
    content: str
    metadata: dict[str, Any] | None = None


class BulkAddMessages(Body):
    conversation_id: str
    messages: list[BulkMessage]


class GetObservations(Body):
    conversation_id: str
    limit: int | None = None


class ListEntities(Body):
    type: str | None = None
    limit: int | None = None


class EntityId(Body):
    entity_id: str


class UpdateEntity(Body):
    entity_id: str
    name: str | None = None
    description: str | None = None


class SetEntityFeedback(Body):
    entity_id: str
    user_score: float
    confirmed: bool


class MergeEntities(Body):
    source_id: str
    target_id: str


class RecordStep(Body):
    conversation_id: str
    reasoning: str
    action_taken: str
    result: str | None = None


class StepId(Body):
    step_id: str


class CypherQuery(Body):
    cypher: str
    params: dict[str, Any] = Field(default_factory=dict)
