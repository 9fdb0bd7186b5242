"""Request bodies of the ``/v1`` routes, as the hosted spec names them.

Field names are camelCase on the wire (``conversationId``, ``userScore``) and the
snake_case spelling is accepted too, because clients written against older specs or
ported from Python send it. Types are strict — ``"content": 5`` or ``"limit": "x"`` is a
400, not silently coerced — and unknown fields are ignored, so a client that sends an
extra (``threshold``, ``workspace_id``, ``entityType``) still works. Value rules (roles,
empty strings, ranges) belong to the backend, which applies them to every caller alike.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from nams_local.backend import DEFAULT_SEARCH_LIMIT

__all__ = [
    "AS_OF",
    "AddMessageBody",
    "BulkMessagesBody",
    "CreateApiKeyBody",
    "CreateConversationBody",
    "CreateEntityBody",
    "CreateRelationshipBody",
    "EntityFeedbackBody",
    "ExpandGraphBody",
    "InvalidateRelationshipBody",
    "MergeEntitiesBody",
    "QueryBody",
    "RecordStepBody",
    "RecordToolCallBody",
    "SearchEntitiesBody",
    "SearchMessagesBody",
    "UpdateEntityBody",
    "UserMessageSearchBody",
]

#: The search ``mode`` extension (hosted picks the mode itself and reports it).
ModeField = Literal["text", "vector", "hybrid"] | None


class Body(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        strict=True,
    )


class CreateConversationBody(Body):
    user_id: str | None = None
    metadata: dict[str, str] | None = None


class AddMessageBody(Body):
    role: str
    content: str
    #: Extension: hosted ignores it; the local engine stores and returns it.
    metadata: dict[str, Any] | None = None


class BulkMessagesBody(Body):
    messages: list[AddMessageBody]


class SearchMessagesBody(Body):
    query: str
    limit: int = DEFAULT_SEARCH_LIMIT
    mode: ModeField = None


class CreateEntityBody(Body):
    name: str
    #: Required in the spec; the TypeScript SDK also sends ``entityType``, accepted alone.
    type: str | None = Field(default=None, validation_alias=AliasChoices("type", "entityType"))
    description: str | None = None
    properties: dict[str, str] | None = None


class UpdateEntityBody(Body):
    name: str | None = None
    description: str | None = None


class SearchEntitiesBody(Body):
    query: str
    type: str | None = None
    limit: int = DEFAULT_SEARCH_LIMIT
    mode: ModeField = None


class EntityFeedbackBody(Body):
    user_score: float | None = None
    confirmed: bool | None = None


class MergeEntitiesBody(Body):
    target_id: str


class RecordStepBody(Body):
    conversation_id: str
    reasoning: str
    action_taken: str
    result: str | None = None


class RecordToolCallBody(Body):
    tool_name: str
    input: str
    output: str | None = None
    status: str | None = None
    step_id: str | None = None
    #: SQLite integers are 64-bit; a larger value would fail in the engine, not here.
    duration_ms: int | None = Field(default=None, ge=0, le=2**63 - 1)


class QueryBody(Body):
    cypher: str
    params: dict[str, Any] | None = None


class CreateApiKeyBody(Body):
    label: str
    scopes: list[str] | None = None


# -- extensions ----------------------------------------------------------------------
class CreateRelationshipBody(Body):
    source_id: str
    target_id: str
    type: str
    properties: dict[str, Any] | None = None
    confidence: float | None = None
    #: Validity (``relationshipValidity``): ``YYYY``, ``YYYY-MM``, ``YYYY-MM-DD``.
    valid_from: str | None = None
    valid_until: str | None = None
    #: ``false``: write as is, close no earlier edge of a single-valued type.
    supersede: bool = True


class InvalidateRelationshipBody(Body):
    valid_until: str | None = None


#: The ``asOf`` query parameter of graph reads.
AS_OF = (
    "nams-local extension: only relationships that held at this date (YYYY, YYYY-MM or YYYY-MM-DD)"
)


class UserMessageSearchBody(Body):
    query: str
    conversation_limit: int = 5
    per_conversation_limit: int = 4
    exclude_conversation_id: str | None = None
    include_steps: bool = True


class ExpandGraphBody(Body):
    """The Python SDK's ``expand_graph`` body (a route the hosted spec does not list)."""

    node_id: str
    loaded_ids: list[str] = Field(default_factory=list)
