"""Response bodies of the ``/v1`` routes, as declarative pydantic models.

They exist for the published OpenAPI document (``openapi.py``): each route names its model
through ``routes.base.answers``, so the document types every answer, and schemathesis
checks in the suite (``tests/server/test_schemathesis.py``) that real answers fit them.
Routes still build their JSON with ``to_wire()`` and ``wire.py`` (no second validation on
the hot path), so how answers are serialized can change without touching these. The
models reuse the domain models of ``nams_local.models`` (camelCase aliases); extra fields
are allowed, as in the hosted spec (B1).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from nams_local.models import (
    Conversation,
    ConversationSearchHits,
    Entity,
    ExtractionStatus,
    ExtractionUnit,
    Message,
    Observation,
    ReasoningStep,
    Reflection,
)

__all__ = [
    "ApiKey",
    "ApiKeyList",
    "CapabilitiesResponse",
    "ConversationList",
    "EntityList",
    "EntitySearch",
    "ExtractionStatusResponse",
    "HealthResponse",
    "MessageList",
    "MessageSearch",
    "NewApiKey",
    "ObservationList",
    "ReflectionList",
    "RevealedKey",
    "RotatedKey",
    "StatusResponse",
    "StepList",
    "UserMessageSearch",
]


class WireModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")


class StatusResponse(WireModel):
    """The hosted ``StatusResponse``: ``deleted``, ``updated``, ``revoked``, ``reset``."""

    status: str


class HealthResponse(WireModel):
    status: str
    version: str
    pid: int
    #: The running event loop's package: ``"uvloop"`` or ``"asyncio"`` (``runtime.py``).
    loop: str


class ConversationList(WireModel):
    conversations: list[Conversation]


class MessageList(WireModel):
    messages: list[Message]


class MessageSearch(WireModel):
    messages: list[Message]
    search_type: str


class ObservationList(WireModel):
    observations: list[Observation]


class ReflectionList(WireModel):
    reflections: list[Reflection]


class ExtractionStatusResponse(ExtractionStatus):
    """B7: the units, again as ``messages``, and a count by status."""

    messages: list[ExtractionUnit] = Field(default_factory=list)
    summary: dict[str, int] = Field(default_factory=dict)


class EntityList(WireModel):
    entities: list[Entity]


class EntitySearch(WireModel):
    entities: list[Entity]
    search_type: str


class StepList(WireModel):
    steps: list[ReasoningStep]


class UserMessageSearch(WireModel):
    conversations: list[ConversationSearchHits]


class CapabilitiesResponse(WireModel):
    relationship_writes: bool
    entity_by_name: bool
    user_message_search: bool
    graph_neighbourhood: bool
    vector_search: bool
    cypher_query: bool
    #: Extension: ``POST /v1/users/{userId}/purge`` deletes every trace (docs/purge.md).
    user_purge: bool
    #: Extension: ``DELETE /v1/conversations/{id}/messages/{messageId}`` (M1).
    message_delete: bool
    search_modes: bool


class ApiKey(WireModel):
    """The hosted ``APIKey`` list item (never the raw key)."""

    id: str
    label: str
    created_at: str
    expires_at: str
    scopes: list[str]
    revoked_at: str | None = None


class ApiKeyList(WireModel):
    keys: list[ApiKey]


class NewApiKey(ApiKey):
    key: str


class RotatedKey(NewApiKey):
    rotated_from: str


class RevealedKey(WireModel):
    id: str
    key: str
    label: str
