"""Models of the legacy memory concepts: sessions, preferences, facts, task traces, tool stats.

The original agent-memory package (and the TCK that tests it) has ideas the hosted API
lacks: a conversation addressed by a free-form *session* string, user *preferences*,
subject-predicate-object *facts*, *task traces* whose steps are numbered 1, 2, 3 and carry
tool calls with JSON arguments and results, and per-tool statistics. The local engine keeps
them as first-class data (``SQLiteBackend.legacy``); the TCK bridge is one of their users.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from nams_local.models import Message, NamsModel, ToolCallStatus

__all__ = [
    "Fact",
    "Preference",
    "SessionInfo",
    "SessionTranscript",
    "ToolStats",
    "Trace",
    "TraceStep",
    "TraceToolCall",
]


class SessionInfo(NamsModel):
    """One session: its name, the conversation that holds it, and a live message count."""

    session_id: str
    conversation_id: str
    message_count: int
    created_at: datetime
    updated_at: datetime | None = None


class SessionTranscript(NamsModel):
    """A session's conversation with its messages in insertion order.

    ``exists`` is ``False`` for a session nobody wrote to: the transcript is then empty and
    ``conversation_id`` is the id the session *will* get (a UUIDv5 of its name).
    """

    session_id: str
    conversation_id: str
    exists: bool
    user_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    messages: list[Message] = Field(default_factory=list)
    created_at: datetime
    updated_at: datetime | None = None


class Preference(NamsModel):
    id: str
    category: str
    preference: str
    context: str | None = None
    created_at: datetime | None = None
    score: float | None = None


class Fact(NamsModel):
    id: str
    subject: str
    predicate: str
    object: str
    created_at: datetime | None = None


class TraceToolCall(NamsModel):
    """A tool call inside a trace step; ``arguments``/``result`` keep their JSON types."""

    id: str
    step_id: str
    tool_name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: Any = None
    status: ToolCallStatus = ToolCallStatus.SUCCESS
    duration_ms: int | None = None
    error: str | None = None
    created_at: datetime | None = None


class TraceStep(NamsModel):
    id: str
    trace_id: str
    step_number: int
    thought: str | None = None
    action: str | None = None
    observation: str | None = None
    tool_calls: list[TraceToolCall] = Field(default_factory=list)
    created_at: datetime | None = None


class Trace(NamsModel):
    """A task an agent worked on, within a session, and how it ended."""

    id: str
    session_id: str
    task: str
    steps: list[TraceStep] = Field(default_factory=list)
    outcome: str | None = None
    success: bool | None = None
    started_at: datetime
    completed_at: datetime | None = None
    score: float | None = None


class ToolStats(NamsModel):
    """Aggregates over every stored trace tool call of one tool.

    ``failed_calls`` counts ``failure``, ``error`` and ``timeout``; ``pending`` and
    ``cancelled`` count only in ``total_calls``.
    """

    name: str
    total_calls: int
    successful_calls: int
    failed_calls: int
    success_rate: float
    avg_duration_ms: float | None = None
