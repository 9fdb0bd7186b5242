"""``LegacyMemory``: sessions, preferences, facts, task traces and tool stats from Python.

Reached as ``SQLiteBackend.legacy``. These are the memory concepts of the original
agent-memory package (and of the TCK that tests it) which the hosted API lacks; they share
the backend's store, workspace and tables, so a session's messages are ordinary messages
(visible on ``/v1`` too) and the legacy entity calls work on the same entity graph. Every
call is one unit of work on the store's worker thread, deterministic and synchronous: no
fuzzy entity resolution, no extraction, nothing left running after it returns.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Concatenate, ParamSpec, TypeVar

from nams_local.backend import MAX_BULK_MESSAGES
from nams_local.errors import InvalidInputError, NotFoundError
from nams_local.models import (
    MESSAGE_ROLES,
    Entity,
    Message,
    NewMessage,
    Relationship,
    ToolCallStatus,
)
from nams_local.validation import check_entity_name, check_metadata, check_tool_call

from ..store import Ctx, SQLiteStore, entity_text
from ..vectors import Vectors
from . import exact_entities, facts, preferences, sessions, tool_stats, traces
from .models import (
    Fact,
    Preference,
    SessionInfo,
    SessionTranscript,
    ToolStats,
    Trace,
    TraceStep,
    TraceToolCall,
)
from .wipe import clear_workspace

__all__ = ["MAX_LEGACY_LIMIT", "LegacyMemory", "strict_status"]

P = ParamSpec("P")
R = TypeVar("R")

#: Largest ``limit`` a legacy list or search accepts.
MAX_LEGACY_LIMIT = 10_000

Embed = Callable[[list[str]], Awaitable[Vectors | None]]


def _text(value: object, name: str, *, allow_empty: bool = False) -> str:
    """A required string, kept exactly as given (no trimming: names round-trip)."""
    if not isinstance(value, str) or (not allow_empty and value == ""):
        raise InvalidInputError(f"{name} is required (a non-empty string)")
    return value


def _cap(limit: int, name: str = "limit") -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 0 <= limit <= MAX_LEGACY_LIMIT:
        raise InvalidInputError(f"{name} must be an integer from 0 to {MAX_LEGACY_LIMIT}")
    return limit


def strict_status(status: ToolCallStatus | str) -> ToolCallStatus:
    """One of the six statuses exactly (the legacy API has no aliases and no default)."""
    try:
        return ToolCallStatus(status)
    except ValueError:
        raise InvalidInputError(f"invalid tool call status {status!r}") from None


def _role(role: object) -> str:
    if role not in MESSAGE_ROLES:
        raise InvalidInputError(
            f"invalid role {role!r}: must be one of {', '.join(sorted(MESSAGE_ROLES))}"
        )
    return str(role)


def _messages(messages: Sequence[NewMessage]) -> list[NewMessage]:
    if len(messages) > MAX_BULK_MESSAGES:
        raise InvalidInputError(
            f"at most {MAX_BULK_MESSAGES} messages per bulk request, got {len(messages)}"
        )
    for index, message in enumerate(messages):
        try:
            _role(message.role)
            _text(message.content, "content", allow_empty=True)
            check_metadata(message.metadata)
        except InvalidInputError as exc:
            raise InvalidInputError(f"messages[{index}]: {exc.message}") from None
    return list(messages)


class LegacyMemory:
    """The legacy memory API of one workspace of a ``SQLiteStore``."""

    def __init__(self, store: SQLiteStore, ctx: Ctx, embed: Embed) -> None:
        self._store = store
        self._ctx = ctx
        self._embed = embed

    async def _run(
        self, fn: Callable[Concatenate[Ctx, P], R], *args: P.args, **kwargs: P.kwargs
    ) -> R:
        return await self._store.run(fn, self._ctx, *args, **kwargs)

    # -- sessions and their messages ---------------------------------------------------
    async def add_session_message(
        self,
        session_id: str,
        role: str,
        content: str,
        metadata: dict[str, Any] | None = None,
    ) -> Message:
        """Append a message to the session, creating the session when it is new.

        ``session_id`` may also be a conversation id (``create_session_conversation``).
        Content is stored exactly (empty allowed); metadata is any JSON object.
        """
        message = NewMessage(role=role, content=content, metadata=metadata)
        (stored,) = await self.add_session_messages(session_id, [message])
        return stored

    async def add_session_messages(
        self, session_id: str, messages: Sequence[NewMessage], *, create: bool = True
    ) -> list[Message]:
        """Append up to 100 messages in order; ``create=False`` refuses an unknown session
        with ``NotFoundError`` instead of creating it."""
        _text(session_id, "session_id")
        batch = _messages(messages)
        embedded = await self._embed([m.content for m in batch]) if batch else None
        return await self._run(
            sessions.add_session_messages, session_id, batch, embedded, create=create
        )

    async def get_session(self, session_id: str, limit: int | None = None) -> SessionTranscript:
        """The session's oldest ``limit`` messages (all by default), in insertion order.
        An unknown session gives an empty transcript (``exists=False``), creating nothing."""
        _text(session_id, "session_id")
        if limit is not None:
            _cap(limit)
        return await self._run(sessions.get_session, session_id, limit)

    async def get_session_info(self, conversation_id: str) -> SessionTranscript:
        """The conversation's metadata without messages (``NotFoundError`` when unknown)."""
        found = await self._run(sessions.get_session, conversation_id, 0, with_messages=False)
        if not found.exists:
            raise NotFoundError(f"conversation {conversation_id!r} not found")
        return found

    async def create_session_conversation(
        self, user_id: str | None = None, metadata: dict[str, Any] | None = None
    ) -> SessionTranscript:
        """A new conversation whose session name is its id; metadata is any JSON object."""
        check_metadata(metadata)
        return await self._run(sessions.create_conversation, user_id, metadata)

    async def list_sessions(self, limit: int = 100) -> list[SessionInfo]:
        """Sessions with live message counts, most recently active first."""
        return await self._run(sessions.list_sessions, _cap(limit))

    async def list_session_conversations(self, limit: int | None = None) -> list[SessionTranscript]:
        """Every conversation (message-less), newest created first."""
        return await self._run(
            sessions.list_session_conversations, None if limit is None else _cap(limit)
        )

    async def delete_message(self, message_id: str) -> bool:
        """``True`` if the message existed and is now deleted, else ``False``."""
        if not isinstance(message_id, str):
            raise InvalidInputError("message_id must be a string")
        return await self._run(sessions.delete_message, message_id)

    async def clear_session(self, session_id: str) -> None:
        """Delete the session's conversation and messages (a no-op when unknown)."""
        await self._run(sessions.clear_session, _text(session_id, "session_id"))

    async def search_messages(
        self,
        query: str,
        session_id: str | None = None,
        limit: int = 10,
        threshold: float = 0.7,
    ) -> list[Message]:
        """Messages sharing words with ``query``, scored 0–1 (``score ≥ threshold``), best
        first; all sessions unless ``session_id`` is given."""
        _text(query, "query", allow_empty=True)
        return await self._run(
            sessions.search_session_messages, query, session_id, _cap(limit), _threshold(threshold)
        )

    # -- preferences and facts -------------------------------------------------------
    async def add_preference(
        self, category: str, preference: str, context: str | None = None
    ) -> Preference:
        return await self._run(
            preferences.add_preference,
            _text(category, "category"),
            _text(preference, "preference"),
            context,
        )

    async def list_preferences(
        self, category: str | None = None, limit: int | None = None
    ) -> list[Preference]:
        return await self._run(
            preferences.list_preferences, category, None if limit is None else _cap(limit)
        )

    async def search_preferences(
        self, query: str, category: str | None = None, limit: int = 10
    ) -> list[Preference]:
        """Preferences sharing words with ``query`` (text, category or context), best
        first; the ``category`` filter applies before the limit."""
        _text(query, "query", allow_empty=True)
        return await self._run(preferences.search_preferences, query, category, _cap(limit))

    async def add_fact(self, subject: str, predicate: str, object: str) -> Fact:
        return await self._run(
            facts.add_fact,
            _text(subject, "subject"),
            _text(predicate, "predicate"),
            _text(object, "object"),
        )

    async def list_facts(self, about: str | None = None, limit: int | None = None) -> list[Fact]:
        """Facts oldest first; with ``about``, those whose subject or object it is."""
        return await self._run(facts.list_facts, about, None if limit is None else _cap(limit))

    # -- entities, the exact way -------------------------------------------------------
    async def upsert_entity(self, name: str, type: str, description: str | None = None) -> Entity:
        """The entity with exactly this (name, type), created if missing; never merged with
        a similar one. A given ``description`` replaces the stored one."""
        _text(name, "name")
        check_entity_name(name)
        _text(type, "type")
        vector = await self._embed([entity_text(name, description)])
        return await self._run(exact_entities.upsert_entity, name, type, description, vector)

    async def get_entity(self, entity_id: str) -> Entity:
        return await self._run(exact_entities.get_live_entity, entity_id)

    async def entities_by_id(self, entity_ids: Sequence[str]) -> dict[str, Entity]:
        return await self._run(exact_entities.entities_by_id, list(entity_ids))

    async def list_entities(
        self, type: str | None = None, limit: int | None = None
    ) -> list[Entity]:
        return await self._run(
            exact_entities.list_live_entities, type, None if limit is None else _cap(limit)
        )

    async def get_entity_by_name(self, name: str) -> Entity | None:
        """Exact name, else canonical name, else a merged-away alias; ``None`` if none."""
        return await self._run(exact_entities.find_by_name, _text(name, "name", allow_empty=True))

    async def related_entities(
        self, entity_id: str, relationship_type: str | None = None, depth: int = 1
    ) -> list[Entity]:
        """Entities within ``depth`` hops, edges followed both ways; ``[]`` when unknown."""
        return await self._run(
            exact_entities.related_entities, entity_id, relationship_type, _cap(depth, "depth")
        )

    async def search_entities(self, query: str, limit: int = 10) -> list[Entity]:
        """Live entities by word overlap; an exact name match always comes first."""
        _text(query, "query", allow_empty=True)
        return await self._run(exact_entities.search_by_overlap, query, _cap(limit))

    async def find_relationship(
        self, source_id: str, target_id: str, type: str
    ) -> Relationship | None:
        """The existing edge of exactly this (source, target, type), or ``None``."""
        return await self._run(exact_entities.find_relationship, source_id, target_id, type)

    async def merge_entities(
        self, source_id: str, target_id: str, canonical_name: str | None = None
    ) -> Entity:
        """Merge source into target (edges move, ``SAME_AS`` recorded, source inert) and
        return the target, with ``canonical_name`` set when given."""
        if source_id == target_id:
            raise InvalidInputError("cannot merge an entity into itself")
        return await self._run(exact_entities.merge_into, source_id, target_id, canonical_name)

    # -- task traces ---------------------------------------------------------------------
    async def start_trace(self, session_id: str, task: str) -> Trace:
        return await self._run(
            traces.start_trace, _text(session_id, "session_id"), _text(task, "task")
        )

    async def add_trace_step(
        self,
        trace_id: str,
        thought: str | None = None,
        action: str | None = None,
        observation: str | None = None,
    ) -> TraceStep:
        """Append step number n + 1 to the trace (``NotFoundError`` when unknown)."""
        return await self._run(traces.add_step, trace_id, thought, action, observation)

    async def record_trace_tool_call(
        self,
        step_id: str,
        tool_name: str,
        arguments: dict[str, Any] | None = None,
        result: Any = None,
        status: ToolCallStatus | str = ToolCallStatus.SUCCESS,
        duration_ms: int | None = None,
        error: str | None = None,
    ) -> TraceToolCall:
        """Record a tool call of a trace step; ``arguments``/``result`` keep their JSON."""
        _text(tool_name, "tool_name")
        check_metadata(arguments, "arguments")
        check_metadata({"result": result}, "result")
        parsed = check_tool_call(json.dumps(arguments or {}), strict_status(status), duration_ms)
        return await self._run(
            traces.record_tool_call,
            step_id,
            tool_name,
            arguments or {},
            result,
            parsed,
            duration_ms,
            error,
        )

    async def complete_trace(
        self, trace_id: str, outcome: str | None = None, success: bool | None = None
    ) -> Trace:
        return await self._run(traces.complete_trace, trace_id, outcome, success)

    async def get_trace(self, trace_id: str) -> Trace | None:
        """The trace with numbered steps and their tool calls; ``None`` when unknown."""
        return await self._run(traces.get_trace, trace_id)

    async def list_traces(
        self, session_id: str | None = None, limit: int = 100, *, with_steps: bool = False
    ) -> list[Trace]:
        return await self._run(traces.list_traces, session_id, _cap(limit), with_steps=with_steps)

    async def similar_traces(
        self, task: str, limit: int = 5, success_only: bool = True
    ) -> list[Trace]:
        """Traces of every session whose task shares words with ``task``, best first."""
        _text(task, "task", allow_empty=True)
        return await self._run(traces.similar_traces, task, _cap(limit), success_only)

    async def tool_stats(self, tool_name: str | None = None) -> list[ToolStats]:
        return await self._run(tool_stats.get_tool_stats, tool_name)

    # -- the whole workspace -------------------------------------------------------------
    async def clear_workspace(self) -> None:
        """Delete everything this workspace holds (every memory kind), in one transaction."""
        await self._run(clear_workspace)


def _threshold(value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInputError("threshold must be a finite number")
    return float(value)
