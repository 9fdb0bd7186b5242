"""Small conversions between SQLite rows and the API models."""

from __future__ import annotations

import json
import re
import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Row, Table, insert

from nams_local.models import (
    Conversation,
    Entity,
    Message,
    ReasoningStep,
    ToolCall,
)

from .stored_json import UNREADABLE_KEY, loads
from .token_count import token_count

__all__ = [
    "UNREADABLE_KEY",
    "dumps",
    "insert_rows",
    "loads",
    "name_key",
    "new_id",
    "now",
    "to_conversation",
    "to_entity",
    "to_message",
    "to_step",
    "to_tool_call",
    "token_count",
]

_PUNCT_EDGES = re.compile(r"^[^\w]+|[^\w]+$", re.UNICODE)


def insert_rows(conn: Connection, table: Table, rows: list[dict[str, Any]]) -> list[int]:
    """Insert rows in one statement and return their integer ``pk``s in input order."""
    stmt = insert(table).returning(table.c.pk, sort_by_parameter_order=True)
    return [int(pk) for pk in conn.execute(stmt, rows).scalars().all()]


def new_id() -> str:
    return str(uuid.uuid4())


def now() -> str:
    """UTC now as fixed-width ISO-8601 text, so string order is time order."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def when(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def name_key(name: str) -> str:
    """The name as compared for identity: case-folded, spaces collapsed, edge punctuation off."""
    return _PUNCT_EDGES.sub("", " ".join(name.casefold().split()))


def to_conversation(row: Row[Any], workspace: str) -> Conversation:
    return Conversation(
        id=row.id,
        workspace_id=workspace,
        user_id=row.user_id,
        metadata=loads(row.metadata),
        message_count=row.message_count,
        created_at=when(row.created_at),
        updated_at=when(row.updated_at),
    )


def to_message(row: Row[Any], conversation_id: str, score: float | None = None) -> Message:
    return Message(
        id=row.id,
        conversation_id=conversation_id,
        role=row.role,
        content=row.content,
        metadata=loads(row.metadata),
        created_at=when(row.created_at),
        token_count=row.token_count,
        score=score,
    )


def to_entity(row: Row[Any], score: float | None = None) -> Entity:
    return Entity(
        id=row.id,
        name=row.name,
        type=row.type,
        description=row.description,
        confidence=row.confidence,
        score=score,
        source_stage=row.source_stage,
        canonical_name=row.name,
        properties=loads(row.properties),
        created_at=when(row.created_at),
        updated_at=when(row.updated_at),
    )


def to_step(row: Row[Any], conversation_id: str) -> ReasoningStep:
    return ReasoningStep(
        id=row.id,
        conversation_id=conversation_id,
        reasoning=row.reasoning,
        action_taken=row.action_taken,
        result=row.result,
        created_at=when(row.created_at),
    )


def to_tool_call(row: Row[Any], step_id: str | None) -> ToolCall:
    return ToolCall(
        id=row.id,
        step_id=step_id,
        tool_name=row.tool_name,
        input=row.input,
        output=row.output,
        status=row.status,
        duration_ms=row.duration_ms,
        created_at=when(row.created_at),
    )
