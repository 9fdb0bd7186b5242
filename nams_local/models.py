"""Typed models for everything a memory backend reads or writes.

They cover every field of the hosted NAMS wire contract (``shared/reference/nams-wire-
contract.md``) with snake_case attribute names; camelCase exists only on the wire, where
the hosted client and the server translate (``populate_by_name`` plus camelCase aliases
let the same classes parse either casing). Fields the hosted contract leaves out but the
local engine can give (message ``metadata``, relationship ``direction``, entity
``properties``) are optional, so a model built from a hosted response is always valid.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Generic, Literal, TypeVar

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

__all__ = [
    "EXTENSION_FIELD",
    "MESSAGE_ROLES",
    "Context",
    "Conversation",
    "ConversationMetadata",
    "ConversationSearchHits",
    "ConversationTrace",
    "Entity",
    "EntityDetails",
    "EntityGraph",
    "EntityHistory",
    "EntityMention",
    "EntityProvenance",
    "EntityRelationship",
    "ExtractionStatus",
    "ExtractionUnit",
    "FeedbackResult",
    "GraphEdge",
    "GraphNode",
    "InfluencedEntity",
    "MergeCandidate",
    "MergeResult",
    "Message",
    "MessageRole",
    "MetadataValue",
    "NewMessage",
    "Observation",
    "QueryResult",
    "ReasoningStep",
    "Reflection",
    "Relationship",
    "SearchMode",
    "SearchResult",
    "StepExplanation",
    "ToolCall",
    "ToolCallStatus",
    "Validity",
]

MessageRole = Literal["user", "assistant", "system"]
MESSAGE_ROLES: frozenset[str] = frozenset({"user", "assistant", "system"})

#: How a search ranked its results. ``text`` = BM25 full-text, ``vector`` = embedding
#: similarity, ``hybrid`` = a weighted fusion of both (see ``SearchResult``).
SearchMode = Literal["text", "vector", "hybrid"]


class NamsModel(BaseModel):
    """Base: snake_case attributes, camelCase aliases, either casing accepted on input."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        frozen=False,
    )

    def to_wire(self) -> dict[str, Any]:
        """The camelCase JSON form, without fields that are ``None``."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


#: One value of conversation metadata: a JSON scalar. Hosted NAMS stores what clients send
#: (``{"source": "e2e", "seq": 1}``) although its spec declares strings; nested objects and
#: arrays are refused so the map stays flat (docs/wire-decisions.md, W1).
MetadataValue = str | int | float | bool | None
#: Conversation metadata: a flat map of JSON scalars, returned exactly as given.
ConversationMetadata = dict[str, MetadataValue]


class Conversation(NamsModel):
    """A conversation (hosted list item and single get in one class)."""

    id: str
    workspace_id: str | None = None
    user_id: str | None = None
    metadata: ConversationMetadata = Field(default_factory=dict)
    message_count: int | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None


class NewMessage(NamsModel):
    """A message to write (one item of a bulk add)."""

    role: str
    content: str
    metadata: dict[str, Any] | None = None


class Message(NamsModel):
    """A stored message. ``score`` is set only on search results (see ``SearchResult``)."""

    id: str
    conversation_id: str | None = None
    role: str
    content: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime | None = None
    token_count: int | None = None
    score: float | None = None


class MergeCandidate(NamsModel):
    """An existing entity whose name is close to a new one's (local extension)."""

    id: str
    name: str
    type: str
    similarity: float


class Entity(NamsModel):
    """A long-term memory entity (person, organisation, place, tool, concept ...).

    ``reused`` and ``merge_candidates`` are set only on what ``add_entity`` returns
    (local extensions): ``reused`` is true when the name resolved to an entity that
    already existed (same type; case, spacing, punctuation, a plural or an alias apart),
    which is then returned instead of a duplicate; ``merge_candidates`` lists near names
    that were *not* reused, for the caller to merge explicitly if they are the same.
    """

    id: str
    name: str
    type: str
    description: str | None = None
    confidence: float | None = None
    score: float | None = None
    source_stage: str | None = None
    canonical_name: str | None = None
    properties: dict[str, str] = Field(default_factory=dict)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    reused: bool | None = None
    merge_candidates: list[MergeCandidate] | None = None


#: JSON-schema mark of a field hosted NAMS lacks (the local engine's extensions).
EXTENSION_FIELD: dict[str, Any] = {"x-nams-local-extension": True}


def _ext(description: str) -> Any:
    return Field(default=None, description=description, json_schema_extra=EXTENSION_FIELD)


class Validity(NamsModel):
    """When a relationship holds in the world and when we learned it (extension fields).

    The local engine fills them (``backends/sqlite/validity.py``); hosted NAMS has no such
    fields, so a model read from a hosted response leaves them all ``None`` and the hosted
    client never sends them. Dates are ISO text as precise as what was said: ``"2021"``,
    ``"2021-03"``, ``"2021-03-15"``.
    """

    valid_from: str | None = _ext(
        "nams-local extension: holds from (world time); none: since whenever"
    )
    valid_until: str | None = _ext(
        "nams-local extension: held until (world time); none: still holds"
    )
    current: bool | None = _ext("nams-local extension: true while the relationship still holds")
    superseded_by: str | None = _ext("nams-local extension: the relationship that replaced it")
    recorded_at: datetime | None = _ext("nams-local extension: when it was learned")
    invalidated_at: datetime | None = _ext("nams-local extension: when it was closed")
    source_message_id: str | None = _ext("nams-local extension: the message it was learned from")


class EntityRelationship(Validity):
    """One edge as seen from an entity. Hosted NAMS sends ``relType``; the TS SDK ``type``."""

    type: str = Field(validation_alias=AliasChoices("type", "rel_type", "relType"))
    target_id: str
    target_name: str | None = None
    target_type: str | None = None
    #: ``outgoing`` when the entity is the source, ``incoming`` when it is the target.
    #: Hosted NAMS has no direction field, so hosted responses leave it ``None``.
    direction: Literal["outgoing", "incoming"] | None = None
    id: str | None = None
    properties: dict[str, Any] = Field(default_factory=dict)
    confidence: float | None = None


class EntityDetails(Entity):
    """An entity with its relationships in both directions."""

    relationships: list[EntityRelationship] = Field(default_factory=list)


class Relationship(Validity):
    """A typed, directed edge between two entities (local extension: hosted has no route)."""

    id: str
    source_id: str
    target_id: str
    type: str
    properties: dict[str, Any] = Field(default_factory=dict)
    confidence: float | None = None
    created_at: datetime | None = None


class EntityMention(NamsModel):
    """One message that mentions an entity (an item of entity history)."""

    message_id: str
    conversation_id: str
    role: str | None = None
    content: str
    created_at: datetime | None = None
    #: Which name matched: the entity's own, or that of an entity merged into it.
    matched_name: str | None = None


class EntityHistory(NamsModel):
    entity_id: str
    mentions: list[EntityMention] = Field(default_factory=list)
    #: Extension: the entity's relationships as they were learned and closed, oldest
    #: change first ("when did you learn this?"); ``None`` from hosted NAMS.
    changes: list[EntityRelationship] | None = Field(
        default=None, json_schema_extra=EXTENSION_FIELD
    )


class MergeResult(NamsModel):
    status: str = "merged"
    source_id: str
    target_id: str


class FeedbackResult(NamsModel):
    id: str
    updated: bool


class GraphNode(NamsModel):
    id: str
    name: str
    type: str
    description: str | None = None


class GraphEdge(Validity):
    id: str
    source: str
    target: str
    type: str
    properties: dict[str, Any] = Field(default_factory=dict)
    confidence: float | None = None


class EntityGraph(NamsModel):
    nodes: list[GraphNode] = Field(default_factory=list)
    edges: list[GraphEdge] = Field(default_factory=list)


class ToolCallStatus(StrEnum):
    """Tool call outcome; the legacy ``completed``/``failed`` are rewritten on input."""

    PENDING = "pending"
    SUCCESS = "success"
    FAILURE = "failure"
    ERROR = "error"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"

    @classmethod
    def parse(cls, value: str | ToolCallStatus | None) -> ToolCallStatus:
        """Accept a status as the hosted service does: default success, legacy names mapped."""
        if value is None or value == "":
            return cls.SUCCESS
        if isinstance(value, ToolCallStatus):
            return value
        text = value.strip().lower()
        legacy = {"completed": cls.SUCCESS, "failed": cls.FAILURE}
        if text in legacy:
            return legacy[text]
        return cls(text)


class ToolCall(NamsModel):
    id: str
    step_id: str | None = None
    tool_name: str
    input: str | None = None
    output: str | None = None
    status: ToolCallStatus = ToolCallStatus.SUCCESS
    duration_ms: int | None = None
    created_at: datetime | None = None

    @field_validator("status", mode="before")
    @classmethod
    def _legacy_status(cls, value: Any) -> ToolCallStatus:
        return ToolCallStatus.parse(value)


class ReasoningStep(NamsModel):
    id: str
    conversation_id: str | None = None
    reasoning: str
    action_taken: str
    result: str | None = None
    created_at: datetime | None = None


class ConversationTrace(NamsModel):
    """A conversation's reasoning: steps in order, tool calls flat (join on ``step_id``)."""

    conversation_id: str
    steps: list[ReasoningStep] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)


class InfluencedEntity(NamsModel):
    id: str
    name: str
    type: str


class StepExplanation(ReasoningStep):
    tool_calls: list[ToolCall] = Field(default_factory=list)
    influenced_entities: list[InfluencedEntity] = Field(default_factory=list)


class EntityProvenance(NamsModel):
    """The reasoning steps (with their tool calls) that touched an entity."""

    entity_id: str
    steps: list[StepExplanation] = Field(default_factory=list)


class Observation(NamsModel):
    id: str
    conversation_id: str
    content: str
    created_at: datetime | None = None
    source_msg_ids: list[str] = Field(default_factory=list)


class Reflection(NamsModel):
    id: str
    conversation_id: str
    content: str
    created_at: datetime | None = None
    source_obs_ids: list[str] = Field(default_factory=list)
    superseded_by_id: str | None = None


class Context(NamsModel):
    """The three memory tiers of a conversation, highest level first."""

    reflections: list[Reflection] = Field(default_factory=list)
    observations: list[Observation] = Field(default_factory=list)
    recent_messages: list[Message] = Field(default_factory=list)


class ExtractionUnit(NamsModel):
    message_id: str
    status: str
    attempts: int = 0
    last_run: datetime | None = None
    error: str | None = None


class ExtractionStatus(NamsModel):
    conversation_id: str
    units: list[ExtractionUnit] = Field(default_factory=list)


T = TypeVar("T", Message, Entity)


class SearchResult(NamsModel, Generic[T]):
    """Ranked search hits, best first.

    ``search_type`` names the mode that ran. Every item carries ``score`` in [0, 1],
    higher is better. On the local engine vector and hybrid scores mean the same in every
    search (a query that matches nothing scores low; docs/retrieval.md):

    - ``vector``: the cosine similarity of query and text embeddings, clipped at 0 (a long
      message's best sentence, when that is closer than the whole);
    - ``text``: half the share of the query's terms the text contains, half
      ``t / (t + 4)`` with ``t`` the BM25 relevance per query term, divided by the best
      hit's (so the best text hit scores 1.0, as in the hosted contract);
    - ``hybrid``: ``1 - (1 - v)^(2w) (1 - t)^(2(1 - w))``, ``v`` the vector score and
      ``t`` the text score before that division (a part is 0 for an item the other
      search alone found).
    """

    items: list[T] = Field(default_factory=list)
    search_type: str


class ConversationSearchHits(NamsModel):
    """One conversation's share of a cross-conversation search (``search_user_messages``)."""

    conversation_id: str
    messages: list[Message] = Field(default_factory=list)
    steps: list[ReasoningStep] = Field(default_factory=list)
    search_type: str


class QueryResult(NamsModel):
    columns: list[str] = Field(default_factory=list)
    rows: list[dict[str, Any]] = Field(default_factory=list)
    stats: dict[str, Any] = Field(default_factory=dict)
