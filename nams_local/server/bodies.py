"""Request bodies of the ``/v1`` routes, as the hosted spec names them.

Field names are camelCase on the wire (``conversationId``, ``userScore``) and the
snake_case spelling is accepted too, because clients written against older specs or
ported from Python send it. Types are strict — ``"content": 5`` or ``"limit": "x"`` is a
400, not silently coerced — and unknown fields are ignored, so a client that sends an
extra (``threshold``, ``workspace_id``, ``entityType``) still works. Value rules (roles,
empty strings, ranges) belong to the backend, which applies them to every caller alike.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import Query
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, JsonValue
from pydantic.alias_generators import to_camel

from nams_local.backend import DEFAULT_SEARCH_LIMIT, MAX_BULK_MESSAGES, MAX_LIST_LIMIT
from nams_local.models import MESSAGE_ROLES, ConversationMetadata, ToolCallStatus
from nams_local.validation import DATE_SCHEMA, MAX_DURATION_MS

__all__ = [
    "AS_OF",
    "LABEL_PATTERN",
    "MAX_LABEL_LENGTH",
    "AddMessageBody",
    "AsOf",
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

# What the engine enforces (``nams_local.validation``), declared for the OpenAPI document
# only (``json_schema_extra``): the engine stays the one place that decides, with its own
# messages, and the document says the same thing. schemathesis holds the two together.
#: Not blank: at least one character that ``str.strip`` keeps (Python's whitespace is
#: Unicode White_Space plus U+001C..U+001F).
NOT_BLANK = r"[^\s\x1c-\x1f]"
NonBlank = Annotated[str, Field(json_schema_extra={"pattern": NOT_BLANK})]
#: Present: ``""`` is refused, a blank placeholder is kept (``check_present``).
Present = Annotated[str, Field(json_schema_extra={"minLength": 1})]
Role = Annotated[str, Field(json_schema_extra={"enum": sorted(MESSAGE_ROLES)})]


def _integral(value: Any) -> Any:
    """JSON Schema's ``integer`` includes ``16.0``; so does this server (``16.5`` and
    ``true`` stay refused, E3)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


#: An integer as JSON Schema defines it: a number with no fractional part.
Integer = Annotated[int, BeforeValidator(_integral)]
SearchLimit = Annotated[Integer, Field(json_schema_extra={"minimum": 1, "maximum": MAX_LIST_LIMIT})]
#: Characters a key label may not hold: C0/C1 controls, line and paragraph separators,
#: zero-width and direction formatting characters, the BOM (K7); lone surrogates, which
#: no JSON Schema pattern can name, are refused by the route itself.
_UNPRINTABLE = (
    "\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2064\\ufeff"
)
#: A label: 1 to 200 such characters (``MAX_LABEL_LENGTH``), not all of them blank.
LABEL_PATTERN = f"^[^{_UNPRINTABLE}]*[^\\s{_UNPRINTABLE}][^{_UNPRINTABLE}]*$"
MAX_LABEL_LENGTH = 200
#: The statuses ``ToolCallStatus.parse`` accepts: the spec's, its legacy names, and "".
TOOL_STATUSES: list[JsonValue] = [
    *sorted({*(status.value for status in ToolCallStatus), "completed", "failed", ""})
]


class Body(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        strict=True,
    )


class CreateConversationBody(Body):
    user_id: str | None = None
    #: JSON scalars as values (W1); the spec declares strings, hosted stores what it gets.
    metadata: ConversationMetadata | None = None


class AddMessageBody(Body):
    role: Role
    content: NonBlank
    #: Extension: hosted ignores it; the local engine stores and returns it.
    metadata: dict[str, Any] | None = None


class BulkMessagesBody(Body):
    messages: Annotated[
        list[AddMessageBody],
        Field(json_schema_extra={"minItems": 1, "maxItems": MAX_BULK_MESSAGES}),
    ]


class SearchMessagesBody(Body):
    query: NonBlank
    limit: SearchLimit = DEFAULT_SEARCH_LIMIT
    mode: ModeField = None


def _type_or_entity_type(schema: dict[str, Any]) -> None:
    """``type`` is required, and ``entityType`` (the TypeScript SDK's name) stands in."""
    schema["anyOf"] = [
        {"required": ["type"], "properties": {"type": {"type": "string", "pattern": NOT_BLANK}}},
        {
            "required": ["entityType"],
            "properties": {"entityType": {"type": "string", "pattern": NOT_BLANK}},
        },
    ]


class CreateEntityBody(Body):
    model_config = ConfigDict(json_schema_extra=_type_or_entity_type)

    name: NonBlank
    #: Required in the spec; the TypeScript SDK also sends ``entityType``, accepted alone.
    type: str | None = None
    entity_type: str | None = None
    description: str | None = None

    @property
    def chosen_type(self) -> str | None:
        """``type``, or ``entityType`` where ``type`` is absent, null or blank (R3)."""
        for value in (self.type, self.entity_type):
            if value is not None and value.strip():
                return value
        return self.type if self.type is not None else self.entity_type

    properties: dict[str, str] | None = None


def _name_or_description(schema: dict[str, Any]) -> None:
    """At least one of the two, as a string ("nothing to update" otherwise)."""
    schema["anyOf"] = [
        {"required": [field], "properties": {field: {"type": "string"}}}
        for field in ("name", "description")
    ]


class UpdateEntityBody(Body):
    model_config = ConfigDict(json_schema_extra=_name_or_description)

    name: NonBlank | None = None
    description: str | None = None


class SearchEntitiesBody(Body):
    query: NonBlank
    type: str | None = None
    limit: SearchLimit = DEFAULT_SEARCH_LIMIT
    mode: ModeField = None


class EntityFeedbackBody(Body):
    user_score: float | None = Field(default=None, json_schema_extra={"minimum": 0, "maximum": 1})
    confirmed: bool | None = None


class MergeEntitiesBody(Body):
    target_id: NonBlank


class RecordStepBody(Body):
    conversation_id: str
    reasoning: Present
    action_taken: Present
    result: str | None = None


class RecordToolCallBody(Body):
    tool_name: NonBlank
    input: str
    output: str | None = None
    status: str | None = Field(default=None, json_schema_extra={"enum": TOOL_STATUSES})
    #: Optional (W3): without it the call stands alone; an unknown one is a 404.
    step_id: str | None = None
    duration_ms: Integer | None = Field(default=None, ge=0, le=MAX_DURATION_MS)


class QueryBody(Body):
    cypher: NonBlank
    params: dict[str, Any] | None = None


class CreateApiKeyBody(Body):
    #: 1 to 200 printable characters once stripped (K7); the pattern says the same for the
    #: characters JSON Schema can name: no control, format or separator characters.
    label: Annotated[
        str, Field(json_schema_extra={"pattern": LABEL_PATTERN, "maxLength": MAX_LABEL_LENGTH})
    ]
    scopes: list[str] | None = None


# -- extensions ----------------------------------------------------------------------
#: A validity date, published as exactly what ``check_date`` accepts.
DateText = Annotated[str, Field(json_schema_extra=DATE_SCHEMA)]


class CreateRelationshipBody(Body):
    source_id: NonBlank
    target_id: NonBlank
    type: NonBlank
    properties: dict[str, Any] | None = None
    confidence: float | None = Field(default=None, json_schema_extra={"minimum": 0, "maximum": 1})
    #: Validity (``relationshipValidity``): ``YYYY``, ``YYYY-MM``, ``YYYY-MM-DD``.
    valid_from: DateText | None = None
    valid_until: DateText | None = None
    #: ``false``: write as is, close no earlier edge of a single-valued type.
    supersede: bool = True


class InvalidateRelationshipBody(Body):
    valid_until: DateText | None = None


#: The ``asOf`` query parameter of graph reads.
AS_OF = (
    "nams-local extension: only relationships that held at this date (YYYY, YYYY-MM or YYYY-MM-DD)"
)
AsOf = Annotated[str | None, Query(alias="asOf", description=AS_OF, json_schema_extra=DATE_SCHEMA)]


class UserMessageSearchBody(Body):
    query: NonBlank
    conversation_limit: SearchLimit = 5
    per_conversation_limit: SearchLimit = 4
    exclude_conversation_id: str | None = None
    include_steps: bool = True


class ExpandGraphBody(Body):
    """The Python SDK's ``expand_graph`` body (a route the hosted spec does not list)."""

    node_id: str
    loaded_ids: list[str] = Field(default_factory=list)
