"""What the TCK bridge needs of a backend, as protocols (structural: nothing implements them
by name).

The bridge is an app: it answers the TCK's methods with a memory backend's hosted
operations plus the legacy concepts the hosted API lacks (sessions, preferences, facts,
numbered task traces, tool stats, exact-identity entities). Typing it against these
protocols instead of the SQLite engine keeps the bridge's imports pointing down only at
the legacy models, and states in one place the surface a bridge backend must offer;
``SQLiteBackend`` (with ``SQLiteBackend.legacy``) is the one that does today.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from nams_local.backend import MemoryBackend

if TYPE_CHECKING:
    from backends.sqlite.legacy import models as legacy_models
    from nams_local.models import Entity, Message, NewMessage, Relationship, ToolCallStatus

__all__ = ["BridgeBackend", "LegacyApi"]


class LegacyApi(Protocol):
    """The legacy memory calls the bridge makes, with the arguments it passes (see
    ``backends.sqlite.legacy.LegacyMemory`` for what each one promises)."""

    # -- sessions and their messages
    async def add_session_message(
        self, session_id: str, role: str, content: str, metadata: dict[str, Any] | None
    ) -> Message: ...
    async def add_session_messages(
        self, session_id: str, messages: Sequence[NewMessage], *, create: bool
    ) -> list[Message]: ...
    async def get_session(
        self, session_id: str, limit: int | None
    ) -> legacy_models.SessionTranscript: ...
    async def get_session_info(self, conversation_id: str) -> legacy_models.SessionTranscript: ...
    async def create_session_conversation(
        self, user_id: str | None, metadata: dict[str, Any] | None
    ) -> legacy_models.SessionTranscript: ...
    async def list_sessions(self, limit: int) -> list[legacy_models.SessionInfo]: ...
    async def list_session_conversations(
        self, limit: int | None
    ) -> list[legacy_models.SessionTranscript]: ...
    async def delete_message(self, message_id: str) -> bool: ...
    async def clear_session(self, session_id: str) -> None: ...
    async def search_messages(
        self, query: str, session_id: str | None, limit: int, threshold: float
    ) -> list[Message]: ...

    # -- preferences and facts
    async def add_preference(
        self, category: str, preference: str, context: str | None
    ) -> legacy_models.Preference: ...
    async def search_preferences(
        self, query: str, category: str | None, limit: int
    ) -> list[legacy_models.Preference]: ...
    async def add_fact(self, subject: str, predicate: str, object: str) -> legacy_models.Fact: ...

    # -- entities, the exact way
    async def upsert_entity(self, name: str, type: str, description: str | None) -> Entity: ...
    async def get_entity(self, entity_id: str) -> Entity: ...
    async def entities_by_id(self, entity_ids: Sequence[str]) -> dict[str, Entity]: ...
    async def list_entities(self, type: str | None, limit: int | None) -> list[Entity]: ...
    async def get_entity_by_name(self, name: str) -> Entity | None: ...
    async def related_entities(
        self, entity_id: str, relationship_type: str | None, depth: int
    ) -> list[Entity]: ...
    async def search_entities(self, query: str, limit: int) -> list[Entity]: ...
    async def find_relationship(
        self, source_id: str, target_id: str, type: str
    ) -> Relationship | None: ...
    async def merge_entities(
        self, source_id: str, target_id: str, canonical_name: str | None = None
    ) -> Entity: ...

    # -- task traces and tool stats
    async def start_trace(self, session_id: str, task: str) -> legacy_models.Trace: ...
    async def add_trace_step(
        self, trace_id: str, thought: str | None, action: str | None, observation: str | None
    ) -> legacy_models.TraceStep: ...
    async def record_trace_tool_call(
        self,
        step_id: str,
        tool_name: str,
        arguments: dict[str, Any] | None,
        result: Any,
        status: ToolCallStatus | str,
        duration_ms: int | None,
        error: str | None,
    ) -> legacy_models.TraceToolCall: ...
    async def complete_trace(
        self, trace_id: str, outcome: str | None, success: bool | None
    ) -> legacy_models.Trace: ...
    async def get_trace(self, trace_id: str) -> legacy_models.Trace | None: ...
    async def list_traces(
        self, session_id: str | None, limit: int
    ) -> list[legacy_models.Trace]: ...
    async def similar_traces(
        self, task: str, limit: int, success_only: bool
    ) -> list[legacy_models.Trace]: ...
    async def tool_stats(self, tool_name: str | None) -> list[legacy_models.ToolStats]: ...

    # -- the whole workspace
    async def clear_workspace(self) -> None: ...


class BridgeBackend(MemoryBackend, Protocol):
    """A memory backend (the bridge's Platinum methods are its hosted operations) bound to
    one workspace, with the legacy API of that workspace."""

    @property
    def workspace(self) -> str: ...

    @property
    def legacy(self) -> LegacyApi: ...
