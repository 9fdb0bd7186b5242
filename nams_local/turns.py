"""What one chat turn asks of memory, and what it gets back, in one piece.

The provider's retrieval (``nams_local.retrieval``) reads five sources through seven or
eight protocol calls, each its own unit of work: every call embeds (or looks up) the same
query, looks up the same conversation row, and takes its own turn on the store's threads.
Over HTTP against hosted NAMS there is no other way, but a local engine can answer the
whole turn in one call: one query embedding, one read of the conversation, the sources'
SQL in as few jobs as its threading allows. ``TurnRequest`` says what the turn needs,
``TurnRecall`` carries the raw source results back; the core still applies every rule
(relevance floor, graph expansion, merging) itself, so both paths give the same hits.

A backend offers this through ``nams_local.backend.SupportsTurns``; the core checks that
protocol, never the backend's class.
"""

from __future__ import annotations

from pydantic import Field

from .models import (
    ConversationSearchHits,
    Entity,
    EntityDetails,
    Message,
    NamsModel,
    ReasoningStep,
)

__all__ = ["TurnRecall", "TurnRequest"]


class TurnRequest(NamsModel):
    """The reads of one turn (``retrieve_memories``' first round, all at once)."""

    conversation_id: str
    #: The scope's user: whose other conversations the cross-session source searches.
    user_id: str | None = None
    query: str
    #: Hits of the current conversation (``search_messages`` ``limit``).
    message_limit: int
    #: Long-term entities (``search_entities`` ``limit``).
    entity_limit: int
    #: Other conversations searched, newest first (0: no cross-session source).
    conversation_limit: int = 0
    #: Hits per other conversation.
    per_conversation_limit: int = 0
    #: Also find the user's own entity (``search_entities("me", "person", 1)``).
    user_entity: bool = False


class TurnRecall(NamsModel):
    """Each source's raw result, as the separate protocol calls would have returned it.

    ``details`` holds the ``get_entity`` answer of every entity in ``entities`` (and of
    ``user``), so graph expansion needs no further call for them.
    """

    messages: list[Message] = Field(default_factory=list)
    entities: list[Entity] = Field(default_factory=list)
    steps: list[ReasoningStep] = Field(default_factory=list)
    cross_session: list[ConversationSearchHits] = Field(default_factory=list)
    user: Entity | None = None
    details: dict[str, EntityDetails] = Field(default_factory=dict)
