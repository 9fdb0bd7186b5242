"""The ``MemoryBackend`` protocol: one async method per hosted NAMS operation.

Everything above this layer (retrieval, persistence, integrations, the server) talks to a
``MemoryBackend`` and never to a concrete class, exactly like httpx code talks to a
transport. Operations hosted NAMS lacks are separate methods, each behind a flag in
``Capabilities``; a backend without the capability raises ``NotSupportedError`` and makes
no request, so callers can check the flag first and degrade once, quietly.

Limits shared by every implementation (and by the hosted wire contract) live here too, so
the server, the clients and the engine validate the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, Self, runtime_checkable

from .items import ItemOp, ItemResult
from .models import (
    Context,
    Conversation,
    ConversationSearchHits,
    ConversationTrace,
    Entity,
    EntityDetails,
    EntityGraph,
    EntityHistory,
    EntityProvenance,
    ExtractionStatus,
    FeedbackResult,
    MergeResult,
    Message,
    MetadataValue,
    NewMessage,
    Observation,
    QueryResult,
    ReasoningStep,
    Reflection,
    Relationship,
    SearchMode,
    SearchResult,
    StepExplanation,
    ToolCall,
    ToolCallStatus,
)
from .purge_report import PurgeReport
from .turns import TurnRecall, TurnRequest

__all__ = [
    "DEFAULT_LIST_LIMIT",
    "DEFAULT_SEARCH_LIMIT",
    "MAX_BULK_MESSAGES",
    "MAX_LIST_LIMIT",
    "MAX_PAGE_LIMIT",
    "Capabilities",
    "MemoryBackend",
    "SupportsInfo",
    "SupportsItems",
    "SupportsMessageDelete",
    "SupportsPagedReads",
    "SupportsTurns",
    "SupportsWorkspaceReset",
    "message_deleter",
]

#: ``limit`` on list routes: 1..200, default 50 (hosted contract).
DEFAULT_LIST_LIMIT = 50
MAX_LIST_LIMIT = 200
#: Search ``limit`` has no hosted default; ours is 10, with the same 1..200 range.
DEFAULT_SEARCH_LIMIT = 10
#: At most this many messages in one bulk add (hosted contract).
MAX_BULK_MESSAGES = 100


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a backend can do beyond the hosted contract's common ground.

    The core checks these flags, never the backend's class.
    """

    #: ``add_relationship`` / ``delete_relationship`` work.
    relationship_writes: bool = False
    #: ``get_entity_by_name`` works.
    entity_by_name: bool = False
    #: ``search_user_messages`` (one call for all of a user's other conversations) works.
    user_message_search: bool = False
    #: ``entity_neighbourhood`` works.
    graph_neighbourhood: bool = False
    #: Searches can rank by embeddings (``vector`` / ``hybrid``); else text only.
    vector_search: bool = False
    #: ``query`` (read-only Cypher) works.
    cypher_query: bool = False
    #: Relationships carry validity in time: ``add_relationship``'s ``valid_from`` /
    #: ``valid_until`` / ``supersede`` are stored, ``as_of`` filters graph reads and
    #: ``invalidate_relationship`` works. Without it those arguments are dropped (the
    #: hosted client says so once) and ``invalidate_relationship`` is not supported.
    relationship_validity: bool = False
    #: Default-mode search scores compare across queries (a nonsense query scores low), so
    #: retrieval may drop hits below a relevance floor: the local engine with embeddings.
    #: Hosted NAMS does not say so, and text-only search normalises per search: off there.
    relevance_scores: bool = False
    #: ``purge_user`` deletes every trace of a user, and compacts a file so the text is
    #: gone from disk too (docs/purge.md). Without it, ``purge_user`` deletes what the
    #: backend's routes allow and reports the rest (hosted NAMS: the conversations).
    user_purge: bool = False
    #: ``delete_message`` (``SupportsMessageDelete``) works: one message out of its
    #: conversation. Hosted NAMS has no such route; ``nams-local serve`` has the extension
    #: ``DELETE /v1/conversations/{id}/messages/{messageId}`` (wire decision M1).
    message_delete: bool = False


@runtime_checkable
class MemoryBackend(Protocol):
    """Async memory operations, named after the hosted routes.

    Errors: ``NotFoundError`` for an unknown id, ``InvalidInputError`` for refused input
    (nothing written), ``NotSupportedError`` for a missing capability,
    ``BackendUnavailableError`` when the store cannot be reached.
    """

    @property
    def capabilities(self) -> Capabilities: ...

    # -- conversations ---------------------------------------------------------------
    async def create_conversation(
        self, user_id: str | None = None, metadata: Mapping[str, MetadataValue] | None = None
    ) -> Conversation:
        """``metadata`` values are JSON scalars, returned as given (no objects/arrays)."""
        ...

    async def list_conversations(
        self, user_id: str | None = None, limit: int = DEFAULT_LIST_LIMIT
    ) -> list[Conversation]:
        """Newest activity first."""
        ...

    async def get_conversation(self, conversation_id: str) -> Conversation: ...

    async def delete_conversation(self, conversation_id: str) -> None: ...

    # -- messages --------------------------------------------------------------------
    async def add_message(
        self,
        conversation_id: str,
        role: str,
        content: str,
        metadata: dict[str, Any] | None = None,
    ) -> Message: ...

    async def add_messages(
        self, conversation_id: str, messages: Sequence[NewMessage]
    ) -> list[Message]:
        """Bulk add, at most ``MAX_BULK_MESSAGES``, all or nothing."""
        ...

    async def list_messages(
        self, conversation_id: str, limit: int = DEFAULT_LIST_LIMIT
    ) -> list[Message]:
        """Newest first."""
        ...

    async def search_messages(
        self,
        conversation_id: str,
        query: str,
        limit: int = DEFAULT_SEARCH_LIMIT,
        mode: SearchMode | None = None,
    ) -> SearchResult[Message]: ...

    # -- context, observations, reflections, extraction status ------------------------
    async def get_context(self, conversation_id: str) -> Context: ...

    async def list_observations(
        self, conversation_id: str, limit: int = DEFAULT_LIST_LIMIT
    ) -> list[Observation]: ...

    async def list_reflections(self, conversation_id: str) -> list[Reflection]: ...

    async def get_extraction_status(self, conversation_id: str) -> ExtractionStatus: ...

    # -- entities --------------------------------------------------------------------
    async def add_entity(
        self,
        name: str,
        type: str,
        description: str | None = None,
        properties: dict[str, str] | None = None,
    ) -> Entity: ...

    async def list_entities(self, type: str | None = None) -> list[Entity]: ...

    async def get_entity(self, entity_id: str) -> EntityDetails: ...

    async def update_entity(
        self, entity_id: str, name: str | None = None, description: str | None = None
    ) -> None: ...

    async def delete_entity(self, entity_id: str) -> None: ...

    async def search_entities(
        self,
        query: str,
        type: str | None = None,
        limit: int = DEFAULT_SEARCH_LIMIT,
        mode: SearchMode | None = None,
    ) -> SearchResult[Entity]: ...

    async def entity_feedback(
        self, entity_id: str, user_score: float | None = None, confirmed: bool | None = None
    ) -> FeedbackResult: ...

    async def get_entity_history(self, entity_id: str) -> EntityHistory: ...

    async def merge_entities(self, source_id: str, target_id: str) -> MergeResult: ...

    async def get_graph(self, as_of: str | None = None) -> EntityGraph:
        """``as_of`` (extension, capability ``relationship_validity``): only the edges
        that held at that date (``YYYY``, ``YYYY-MM``, ``YYYY-MM-DD``)."""
        ...

    # -- reasoning -------------------------------------------------------------------
    async def record_step(
        self,
        conversation_id: str,
        reasoning: str,
        action_taken: str,
        result: str | None = None,
    ) -> ReasoningStep: ...

    async def list_steps(self, conversation_id: str) -> list[ReasoningStep]: ...

    async def record_tool_call(
        self,
        tool_name: str,
        input: str,
        output: str | None = None,
        status: ToolCallStatus | str | None = None,
        step_id: str | None = None,
        duration_ms: int | None = None,
    ) -> ToolCall: ...

    async def get_trace(self, conversation_id: str) -> ConversationTrace: ...

    async def explain_step(self, step_id: str) -> StepExplanation: ...

    async def get_provenance(self, entity_id: str) -> EntityProvenance: ...

    # -- query -----------------------------------------------------------------------
    async def query(self, cypher: str, params: dict[str, Any] | None = None) -> QueryResult:
        """Read-only Cypher (capability ``cypher_query``)."""
        ...

    # -- extensions (each behind a capability) ----------------------------------------
    async def add_relationship(
        self,
        source_id: str,
        target_id: str,
        type: str,
        properties: dict[str, Any] | None = None,
        confidence: float | None = None,
        *,
        valid_from: str | None = None,
        valid_until: str | None = None,
        supersede: bool = True,
    ) -> Relationship:
        """Capability ``relationship_writes``. With ``relationship_validity`` too, the edge
        holds from ``valid_from`` (default: since whenever) until ``valid_until`` (default:
        still holds), and a single-valued type closes the source's previous edge of that
        type unless ``supersede`` is ``False``; an identical open edge is reused."""
        ...

    async def delete_relationship(self, relationship_id: str) -> None:
        """Capability ``relationship_writes``."""
        ...

    async def invalidate_relationship(
        self, relationship_id: str, valid_until: str | None = None
    ) -> Relationship:
        """Capability ``relationship_validity``: the edge held until ``valid_until``
        (default today) and holds no more; unlike delete, it stays for the past."""
        ...

    async def get_entity_by_name(self, name: str, type: str | None = None) -> Entity | None:
        """Capability ``entity_by_name``: case- and space-insensitive exact name match."""
        ...

    async def search_user_messages(
        self,
        user_id: str,
        query: str,
        *,
        conversation_limit: int = 5,
        per_conversation_limit: int = 4,
        exclude_conversation_id: str | None = None,
        include_steps: bool = True,
    ) -> list[ConversationSearchHits]:
        """Capability ``user_message_search``.

        The user's conversations in ``list_conversations`` order (newest first), less
        ``exclude_conversation_id``, the first ``conversation_limit``; for each, the hits of
        ``search_messages(id, query, per_conversation_limit)`` and (with ``include_steps``)
        its reasoning steps. One call instead of the 1 + 2·N the hosted API needs.
        """
        ...

    async def entity_neighbourhood(
        self, entity_id: str, depth: int = 1, as_of: str | None = None
    ) -> EntityGraph:
        """Capability ``graph_neighbourhood``: entities within ``depth`` hops, either way
        (with ``as_of``, over the edges that held then)."""
        ...

    async def purge_user(self, user_id: str) -> PurgeReport:
        """Delete every trace of ``user_id`` in this workspace: conversations, messages,
        observations, reflections, steps, tool calls, the entities only the user's
        messages produced, the relationships they stated (docs/purge.md). Every backend
        has it; with capability ``user_purge`` nothing of the user is left (the local
        engine also compacts its file), else ``not_deleted`` says what is."""
        ...

    # -- lifecycle -------------------------------------------------------------------
    async def aclose(self) -> None: ...

    # Implementations that subclass the protocol inherit these two: ``async with`` closes.
    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


@runtime_checkable
class SupportsInfo(Protocol):
    """A backend that can describe itself (``nams-local info``): what it is and what it
    holds, as plain JSON-ready data. Only the local engine does; a hosted client has no
    such route, so the command checks for this protocol instead of calling through ``Any``.
    """

    def info(self) -> dict[str, Any]: ...


#: Rows in one page of ``SupportsPagedReads`` at most.
MAX_PAGE_LIMIT = 1000


@runtime_checkable
class SupportsPagedReads(Protocol):
    """A backend that can read ALL of a workspace, oldest first, in keyset pages (the
    local engine). The list routes stop at the newest 200 (the hosted contract has no
    paging), so a full copy (``nams-local sync --to``) reads through this instead; a
    backend without it is read through the list routes and the rest is reported.
    """

    async def conversations_page(
        self, after: str | None = None, limit: int = MAX_PAGE_LIMIT
    ) -> list[Conversation]:
        """Up to ``limit`` conversations in creation order, after the one with id
        ``after`` (from the first when None)."""
        ...

    async def messages_page(
        self,
        conversation_id: str,
        after: str | None = None,
        limit: int = MAX_PAGE_LIMIT,
        *,
        skip: int = 0,
    ) -> list[Message]:
        """Up to ``limit`` messages of the conversation oldest first, after the message
        ``after`` (from the first when None), leaving out the first ``skip`` of those."""
        ...


@runtime_checkable
class SupportsItems(Protocol):
    """A backend that holds namespaced key/value items (``nams_local.items``): what
    LangGraph's ``BaseStore`` (``integrations.langgraph.NamsStore``) runs on. The local
    engine does; hosted NAMS has no such routes, so the adapter checks this protocol and
    refuses a backend without it at construction instead of failing on the first call.
    """

    async def item_batch(self, ops: Sequence[ItemOp]) -> list[ItemResult]:
        """Run ``ops`` in order in one transaction; one result per op (``None`` for a put).
        A batch over a bound (``nams_local.items``) is refused whole with
        ``InvalidInputError``."""
        ...


@runtime_checkable
class SupportsWorkspaceReset(Protocol):
    """A backend that can empty its workspace in one step (every conversation, message,
    entity, relationship, step and tool call). Test suites reset between tests through the
    server's opt-in ``POST /v1/testing/reset`` (``serve --allow-reset``); hosted NAMS has no
    such route, so it is a protocol of its own rather than part of ``MemoryBackend``."""

    async def reset_workspace(self) -> None: ...


@runtime_checkable
class SupportsTurns(Protocol):
    """A backend that serves a chat turn in as few units of work as it can: the first
    round of ``retrieve_memories`` as one call (``nams_local.turns``), and a turn's
    messages written as one unit (one transaction, one commit). The local engine does;
    the hosted client does not, so its traffic stays what the TypeScript provider sends.
    """

    async def recall_turn(self, request: TurnRequest) -> TurnRecall:
        """Every source of ``request`` at once; fails whole (the caller then asks source by
        source, so one failing source costs only itself)."""
        ...

    async def persist_turn(
        self, conversation_id: str, messages: Sequence[NewMessage]
    ) -> list[Message]:
        """``add_messages``' contract (all or nothing), returning once committed."""
        ...


@runtime_checkable
class SupportsMessageDelete(Protocol):
    """A backend that can delete one message of a conversation (the memory inspector's
    "that message should not be remembered"). Hosted NAMS has no such route, so it is a
    protocol of its own, and the capability ``message_delete`` says whether it works (the
    hosted client has the method but only ``nams-local serve`` advertises the route); the
    inspector offers the action only where both hold."""

    async def delete_message(self, conversation_id: str, message_id: str) -> None:
        """Idempotent (W2): a message id that is not (or no longer) in the workspace changes
        nothing. ``NotFoundError`` when the conversation is unknown, or when the message is
        one of *another* conversation (a client bug; nothing deleted): the conversation is
        named so that the caller proves which message it means (wire decision M1).
        Entities extracted from the message stay (shared memory; delete them separately).
        ``NotSupportedError`` without the capability ``message_delete``."""
        ...


def message_deleter(backend: object) -> SupportsMessageDelete | None:
    """``backend`` as a ``SupportsMessageDelete`` if it has the method *and* the capability
    (the hosted client has the method everywhere, the route only on ``nams-local serve``;
    its ``capabilities`` say so once probed), else None: the one test the ``/v1`` route
    and the inspector share."""
    if not isinstance(backend, SupportsMessageDelete):
        return None
    flags = getattr(backend, "capabilities", None)
    return backend if isinstance(flags, Capabilities) and flags.message_delete else None
