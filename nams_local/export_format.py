"""The export file format (``nams-local export`` / ``import``), version 1: record types and checks.

A file is line-delimited JSON (``docs/export-format.md``): a header line, one record per
line with a ``kind``, and an ``end`` line counting the records. It lives in the types layer
so that any ``MemoryBackend`` can be imported into, and any reader validates the same way:
every line is bounded in bytes, parsed strictly (``strict_json``), checked for depth
(``json_depth``) and against its kind's model before anything of its batch is written.

Records name rows by their API ids (never by a store's integer keys) and order parents
before children, so an importer can stream: one pass, bounded memory, one batch at a time.
The ``end`` line is what tells a complete file from one cut at a line boundary.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from .errors import InvalidInputError
from .json_depth import check_json_depth
from .strict_json import parse_strict_json

__all__ = [
    "FORMAT",
    "ID_FIELDS",
    "ID_LIST_FIELDS",
    "KIND_ORDER",
    "MAX_LINE_BYTES",
    "VERSION",
    "BatchResult",
    "ConversationRecord",
    "EndRecord",
    "EntityRecord",
    "ExportHeader",
    "ExportRecord",
    "ExtractionState",
    "FactRecord",
    "FeedbackRecord",
    "ItemRecord",
    "LineSource",
    "MentionRecord",
    "MergeRecord",
    "MessageRecord",
    "NumberedRecord",
    "ObservationRecord",
    "PreferenceRecord",
    "ReasoningStepRecord",
    "ReflectionRecord",
    "RelationshipRecord",
    "SessionRecord",
    "Skipped",
    "SupportsExport",
    "SupportsImport",
    "ToolCallRecord",
    "TraceRecord",
    "TraceStepRecord",
    "TraceToolCallRecord",
    "UserEntityRecord",
    "check_vectors",
    "decode_vector",
    "dump_line",
    "encode_vector",
    "parse_header",
    "parse_record",
    "read_lines",
    "remap_ids",
]

FORMAT = "nams-local-export"
#: Bumped when a reader of the previous version could misread a file of the new one.
VERSION = 1
#: No line may be longer (an item value is at most 1 MiB, escaped maybe twice that, plus
#: its vector); a longer line is refused before it is parsed.
MAX_LINE_BYTES = 8 << 20

_ID = Annotated[str, Field(min_length=1, max_length=200)]
_TIME = Annotated[str, Field(min_length=1, max_length=64)]
_SHORT = Annotated[str, Field(max_length=10_000)]
_TEXT = Annotated[str, Field(max_length=4_000_000)]
_VECTOR = Annotated[str, Field(max_length=1_000_000)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ExportHeader(_Strict):
    """The first line: what the file is, which version, and what it was cut from."""

    format: Literal["nams-local-export"]
    version: int
    workspace: _ID
    #: Set when the export was limited to one user's memory (``--user``).
    user: _ID | None = None
    created_at: _TIME
    nams_local: Annotated[str, Field(max_length=64)]
    #: Vectors are in the file (``--with-vectors``), made by ``embedder`` at ``dimension``;
    #: an importer whose embedder differs re-embeds instead.
    with_vectors: bool = False
    embedder: Annotated[str, Field(max_length=200)] | None = None
    dimension: Annotated[int, Field(ge=1, le=65_536)] | None = None


class ConversationRecord(_Strict):
    kind: Literal["conversation"]
    id: _ID
    user_id: _ID | None
    metadata: dict[str, str | int | float | bool | None]
    created_at: _TIME
    updated_at: _TIME


class ExtractionState(_Strict):
    """Where a message's extraction stood (``pending`` ones are extracted after import)."""

    status: Annotated[str, Field(max_length=32)]
    attempts: Annotated[int, Field(ge=0)]
    last_run: _TIME | None
    error: _SHORT | None


class MessageRecord(_Strict):
    kind: Literal["message"]
    id: _ID
    conversation_id: _ID
    role: Annotated[str, Field(max_length=32)]
    content: _TEXT
    metadata: dict[str, Any]
    created_at: _TIME
    extraction: ExtractionState | None = None
    #: ``--with-vectors``: the whole text's vector, then its passages' (``passages.py``).
    vectors: list[_VECTOR] | None = None


class EntityRecord(_Strict):
    kind: Literal["entity"]
    id: _ID
    name: Annotated[str, Field(min_length=1, max_length=512)]
    type: Annotated[str, Field(min_length=1, max_length=512)]
    description: _TEXT | None
    properties: dict[str, Any]
    confidence: float | None
    source_stage: Annotated[str, Field(max_length=64)] | None
    #: The name an explicit merge gave it, if any.
    canonical_name: Annotated[str, Field(max_length=512)] | None = None
    created_at: _TIME
    updated_at: _TIME
    vector: _VECTOR | None = None


class UserEntityRecord(_Strict):
    """The person entity that stands for a user (extraction binds "I" to it)."""

    kind: Literal["user_entity"]
    user_id: _ID
    entity_id: _ID
    named: bool


class MergeRecord(_Strict):
    """``source_id`` was merged into ``target_id`` (its SAME_AS edge is a relationship)."""

    kind: Literal["merge"]
    source_id: _ID
    target_id: _ID


class FeedbackRecord(_Strict):
    kind: Literal["feedback"]
    entity_id: _ID
    user_score: Annotated[float, Field(ge=0.0, le=1.0)] | None
    confirmed: bool | None


class RelationshipRecord(_Strict):
    kind: Literal["relationship"]
    id: _ID
    source_id: _ID
    target_id: _ID
    type: Annotated[str, Field(min_length=1, max_length=512)]
    properties: dict[str, Any]
    confidence: Annotated[float, Field(ge=0.0, le=1.0)] | None
    created_at: _TIME
    valid_from: _TIME | None = None
    valid_until: _TIME | None = None
    invalidated_at: _TIME | None = None
    superseded_by: _ID | None = None
    source_message_id: _ID | None = None


class MentionRecord(_Strict):
    kind: Literal["mention"]
    entity_id: _ID
    message_id: _ID


class ReasoningStepRecord(_Strict):
    kind: Literal["reasoning_step"]
    id: _ID
    conversation_id: _ID
    reasoning: _TEXT
    action_taken: _TEXT
    result: _TEXT | None
    created_at: _TIME


class ToolCallRecord(_Strict):
    kind: Literal["tool_call"]
    id: _ID
    step_id: _ID | None
    tool_name: Annotated[str, Field(min_length=1, max_length=512)]
    input: _TEXT
    output: _TEXT | None
    status: Annotated[str, Field(max_length=32)]
    duration_ms: Annotated[int, Field(ge=0, le=2**53 - 1)] | None
    created_at: _TIME


class ObservationRecord(_Strict):
    kind: Literal["observation"]
    id: _ID
    conversation_id: _ID
    content: _TEXT
    source_message_ids: list[_ID]
    created_at: _TIME


class ReflectionRecord(_Strict):
    kind: Literal["reflection"]
    id: _ID
    conversation_id: _ID
    content: _TEXT
    source_observation_ids: list[_ID]
    superseded_by_id: _ID | None
    created_at: _TIME


class SessionRecord(_Strict):
    """Legacy (TCK bridge): a free-form session name and the conversation holding it."""

    kind: Literal["session"]
    session_id: Annotated[str, Field(min_length=1, max_length=1000)]
    conversation_id: _ID


class PreferenceRecord(_Strict):
    kind: Literal["preference"]
    id: _ID
    category: _SHORT
    preference: _TEXT
    context: _TEXT | None
    created_at: _TIME


class FactRecord(_Strict):
    kind: Literal["fact"]
    id: _ID
    subject: _TEXT
    predicate: _TEXT
    object: _TEXT
    created_at: _TIME


class TraceRecord(_Strict):
    kind: Literal["trace"]
    id: _ID
    session_id: Annotated[str, Field(min_length=1, max_length=1000)]
    task: _TEXT
    outcome: _TEXT | None
    success: bool | None
    started_at: _TIME
    completed_at: _TIME | None


class TraceStepRecord(_Strict):
    kind: Literal["trace_step"]
    id: _ID
    trace_id: _ID
    step_number: Annotated[int, Field(ge=0, le=2**53 - 1)]
    thought: _TEXT | None
    action: _TEXT | None
    observation: _TEXT | None
    created_at: _TIME


class TraceToolCallRecord(_Strict):
    kind: Literal["trace_tool_call"]
    id: _ID
    step_id: _ID
    tool_name: Annotated[str, Field(min_length=1, max_length=512)]
    #: Any JSON value (the legacy API stores arguments and results as JSON).
    arguments: Any
    result: Any = None
    status: Annotated[str, Field(max_length=32)]
    duration_ms: Annotated[int, Field(ge=0, le=2**53 - 1)] | None
    error: _TEXT | None
    created_at: _TIME


class ItemRecord(_Strict):
    """A namespaced key/value item (LangGraph store); times are epoch seconds."""

    kind: Literal["item"]
    namespace: Annotated[list[Annotated[str, Field(max_length=256)]], Field(max_length=16)]
    key: Annotated[str, Field(max_length=1024)]
    value: dict[str, Any]
    text: _TEXT | None
    created_at: float
    updated_at: float
    ttl_minutes: float | None
    expires_at: float | None
    vector: _VECTOR | None = None


class EndRecord(_Strict):
    """The last line: how many records came before it (a file without it was cut short)."""

    kind: Literal["end"]
    records: Annotated[int, Field(ge=0)]


ExportRecord = Annotated[
    ConversationRecord
    | MessageRecord
    | EntityRecord
    | UserEntityRecord
    | MergeRecord
    | FeedbackRecord
    | RelationshipRecord
    | MentionRecord
    | ReasoningStepRecord
    | ToolCallRecord
    | ObservationRecord
    | ReflectionRecord
    | SessionRecord
    | PreferenceRecord
    | FactRecord
    | TraceRecord
    | TraceStepRecord
    | TraceToolCallRecord
    | ItemRecord
    | EndRecord,
    Field(discriminator="kind"),
]

#: The order kinds appear in: every reference points at a kind earlier in the list (or at
#: a record of its own kind: a later reflection, the SAME_AS target of a merge).
KIND_ORDER = (
    "conversation",
    "message",
    "entity",
    "user_entity",
    "merge",
    "feedback",
    "relationship",
    "mention",
    "reasoning_step",
    "tool_call",
    "observation",
    "reflection",
    "session",
    "preference",
    "fact",
    "trace",
    "trace_step",
    "trace_tool_call",
    "item",
    "end",
)

_RECORD: TypeAdapter[ExportRecord] = TypeAdapter(ExportRecord)


@runtime_checkable
class SupportsExport(Protocol):
    """A backend that can stream its workspace as export records (the local engine).

    The iterator is synchronous and blocking (it reads the store page by page, in one
    read snapshot when the store is a file): call it from a thread inside an event loop.
    """

    def export_records(
        self, *, user_id: str | None = None, with_vectors: bool = False
    ) -> Iterator[BaseModel]: ...

    def export_header(
        self, *, user_id: str | None = None, with_vectors: bool = False
    ) -> ExportHeader: ...


#: A record with the line it was read from (what a report names).
NumberedRecord = tuple[int, ExportRecord]


@dataclass(frozen=True, slots=True)
class Skipped:
    """A well-formed record the target could not take, and why (e.g. its parent is in
    neither the file nor the store, or the target has no such records)."""

    line: int
    kind: str
    reason: str


@dataclass(slots=True)
class BatchResult:
    """What importing one batch did: records written by kind, records already there
    (a second import finds every record here), records skipped."""

    added: dict[str, int] = field(default_factory=dict)
    present: int = 0
    skipped: list[Skipped] = field(default_factory=list)

    def add(self, kind: str, n: int = 1) -> None:
        self.added[kind] = self.added.get(kind, 0) + n

    def skip(self, line: int, kind: str, reason: str) -> None:
        self.skipped.append(Skipped(line, kind, reason))


@runtime_checkable
class SupportsImport(Protocol):
    """A backend that takes export records as they are (the local engine): ids, times,
    validity, extraction results and (when compatible) vectors kept, one transaction per
    batch. Without it an importer replays records through ``MemoryBackend`` methods."""

    async def import_batch(
        self, header: ExportHeader, records: Sequence[NumberedRecord]
    ) -> BatchResult: ...


#: Fields that hold record ids (remapped together by ``remap_ids``).
ID_FIELDS = (
    "id",
    "conversation_id",
    "entity_id",
    "message_id",
    "source_id",
    "target_id",
    "step_id",
    "trace_id",
    "superseded_by",
    "source_message_id",
    "superseded_by_id",
)
ID_LIST_FIELDS = ("source_message_ids", "source_observation_ids")
_REMAP = uuid.UUID("6f1d3c2a-7b8e-4d51-9a0c-2e4f6b8d0a13")


def remap_ids(record: ExportRecord, workspace: str) -> ExportRecord:
    """``record`` with every id replaced by a UUIDv5 of ``workspace`` and the id.

    Ids are unique across a store's workspaces, so a file imported into another workspace
    than it was exported from (of the same store, say) cannot keep them. The new ids are a
    function of the old: importing the same file twice maps to the same ids (idempotent),
    and references between records stay consistent."""
    changes: dict[str, Any] = {}
    for name in ID_FIELDS:
        value = getattr(record, name, None)
        if isinstance(value, str):
            changes[name] = str(uuid.uuid5(_REMAP, f"{workspace}\x1f{value}"))
    for name in ID_LIST_FIELDS:
        values = getattr(record, name, None)
        if isinstance(values, list):
            changes[name] = [str(uuid.uuid5(_REMAP, f"{workspace}\x1f{v}")) for v in values]
    return record.model_copy(update=changes) if changes else record


def _first_error(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    return f"{where}: {first['msg']}" if where else str(first["msg"])


def _load(line: bytes, number: int) -> Any:
    if len(line) > MAX_LINE_BYTES:
        raise InvalidInputError(f"line {number} is longer than {MAX_LINE_BYTES} bytes")
    if not line.endswith(b"\n"):
        raise InvalidInputError(f"line {number} is cut short (the file is truncated)")
    try:
        value = parse_strict_json(line)
    except ValueError as exc:
        raise InvalidInputError(f"line {number} is not valid JSON: {exc}") from None
    check_json_depth(value, f"line {number}")
    if not isinstance(value, dict):
        raise InvalidInputError(f"line {number} is not a JSON object")
    return value


def parse_header(line: bytes) -> ExportHeader:
    """The header of line 1, or ``InvalidInputError`` naming what is wrong (not an export,
    another version)."""
    if not line:
        raise InvalidInputError("the file is empty")
    value = _load(line, 1)
    if value.get("format") != FORMAT:
        raise InvalidInputError(f"not a {FORMAT} file (line 1 has no such header)")
    version = value.get("version")
    if version != VERSION:
        raise InvalidInputError(
            f"export format version {version!r} is not supported; this nams-local reads "
            f"version {VERSION}"
        )
    try:
        return ExportHeader.model_validate(value)
    except ValidationError as exc:
        raise InvalidInputError(f"line 1 (header): {_first_error(exc)}") from None


def parse_record(line: bytes, number: int) -> ExportRecord:
    """The record of line ``number``, or ``InvalidInputError`` naming the line."""
    value = _load(line, number)
    try:
        return _RECORD.validate_python(value)
    except ValidationError as exc:
        kind = value.get("kind")
        raise InvalidInputError(f"line {number} ({kind}): {_first_error(exc)}") from None


class LineSource(Protocol):
    """What an importer reads from: a binary file, stdin, or anything with ``readline``."""

    def readline(self, limit: int = -1, /) -> bytes: ...


def read_lines(stream: LineSource) -> Iterator[tuple[int, bytes]]:
    """Numbered lines of ``stream``, each read with a bound (a longer line is refused
    without being held in memory)."""
    number = 0
    while True:
        line = stream.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        number += 1
        if len(line) > MAX_LINE_BYTES:
            raise InvalidInputError(f"line {number} is longer than {MAX_LINE_BYTES} bytes")
        yield number, line


def dump_line(record: BaseModel) -> bytes:
    """One line of the file: compact JSON, UTF-8, keys in model order, ``\\n``-terminated."""
    return record.model_dump_json().encode("utf-8") + b"\n"


def encode_vector(blob: bytes) -> str:
    """A float32 vector (little-endian bytes) as base64: exact, and a third the size of a
    list of decimal floats."""
    return base64.b64encode(blob).decode("ascii")


def decode_vector(text: str, dimension: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    """The vector ``encode_vector`` wrote, checked to have ``dimension`` finite values."""
    try:
        raw = base64.b64decode(text, validate=True)
    except ValueError:
        raise InvalidInputError("a vector is not valid base64") from None
    if len(raw) != 4 * dimension:
        raise InvalidInputError(f"a vector has {len(raw) // 4} values, expected {dimension}")
    vector = np.frombuffer(raw, dtype="<f4").astype(np.float32)
    if not np.isfinite(vector).all():
        raise InvalidInputError("a vector holds a value that is not finite")
    return vector


def check_vectors(record: BaseModel, header: ExportHeader, number: int) -> None:
    """Refuse a record whose vectors do not decode to the header's dimension (checked with
    the rest of the line, before its batch is written)."""
    found: list[str] = []
    for name in ("vector", "vectors"):
        value = getattr(record, name, None)
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, list):
            found.extend(value)
    if not found:
        return
    if not header.with_vectors or header.dimension is None:
        raise InvalidInputError(f"line {number} has vectors but the header declares none")
    for encoded in found:
        try:
            decode_vector(encoded, header.dimension)
        except InvalidInputError as exc:
            raise InvalidInputError(f"line {number}: {exc.message}") from None
