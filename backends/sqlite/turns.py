"""One chat turn's reads in one unit of work (``SQLiteBackend.recall_turn``).

Source by source, a turn is seven or eight units of work (``nams_local.turns``): each
waits for a thread, looks up the conversation again, and the steps of the current and
the other conversations are read separately. Here everything a turn reads is one reader
job (``turn_reads``): the current conversation's hits and steps, the other conversations'
hits and steps (messages and steps each read in one query), the long-term entity hits, the
user's own entity and the relationships of all of them, which graph expansion needs.
Entity vector search runs on the reader against the snapshot the writer published
(``entity_snapshots.py``), so a turn never waits behind the writer (the previous turn's
extraction, another tenant's bulk write).
"""

from __future__ import annotations

from dataclasses import dataclass

from nams_local.errors import NotFoundError
from nams_local.models import (
    ConversationSearchHits,
    Entity,
    EntityDetails,
    Message,
    ReasoningStep,
    SearchMode,
)
from nams_local.turns import TurnRequest

from . import schema as s
from .conversations import groups_of, materialise, rank_each, steps_of, user_conversations
from .entities import details_of, ranked_entities
from .rows import to_entity
from .store import Ctx
from .vectors import Vector

__all__ = [
    "TurnEntities",
    "TurnMessages",
    "TurnReads",
    "turn_entities",
    "turn_messages",
    "turn_reads",
]

#: The user's own entity, as ``retrieval`` asks for it source by source.
USER_QUERY, USER_TYPE = "me", "person"


@dataclass(frozen=True, slots=True)
class TurnMessages:
    messages: list[Message]
    steps: list[ReasoningStep]
    cross_session: list[ConversationSearchHits]


@dataclass(frozen=True, slots=True)
class TurnEntities:
    entities: list[Entity]
    user: Entity | None
    details: dict[str, EntityDetails]


@dataclass(frozen=True, slots=True)
class TurnReads:
    messages: TurnMessages
    entities: TurnEntities


def turn_reads(
    ctx: Ctx,
    request: TurnRequest,
    query_vector: Vector | None,
    user_vector: Vector | None,
    mode: SearchMode,
    weight: float,
) -> TurnReads:
    """Everything the turn reads, in one transaction (one consistent view of the file)."""
    return TurnReads(
        messages=turn_messages(ctx, request, query_vector, mode, weight),
        entities=turn_entities(ctx, request, query_vector, user_vector, mode, weight),
    )


def turn_messages(
    ctx: Ctx,
    request: TurnRequest,
    query_vector: Vector | None,
    mode: SearchMode,
    weight: float,
) -> TurnMessages:
    """The current conversation's hits and steps, and the cross-session groups: what
    ``search_messages``, ``list_steps`` and ``search_user_messages`` return, read once."""
    conv = ctx.find(s.conversations, request.conversation_id)
    if conv is None:
        raise NotFoundError(f"conversation {request.conversation_id!r} not found")
    query = request.query
    others = (
        user_conversations(ctx, request.user_id, request.conversation_limit, conv.id)
        if request.user_id is not None and request.conversation_limit > 0
        else []
    )
    wanted = [(conv, request.message_limit)]
    wanted += [(other, request.per_conversation_limit) for other in others]
    ranked = rank_each(ctx, wanted, query, query_vector, mode, weight)
    messages = materialise(ctx, ranked)
    steps = steps_of(ctx, [conv, *others])
    return TurnMessages(
        messages=messages[conv.pk],
        steps=steps[conv.pk],
        cross_session=groups_of(others, messages, steps, mode),
    )


def turn_entities(
    ctx: Ctx,
    request: TurnRequest,
    query_vector: Vector | None,
    user_vector: Vector | None,
    mode: SearchMode,
    weight: float,
) -> TurnEntities:
    """The long-term hits and (when asked) the user's entity, each with its relationships."""
    found = ranked_entities(
        ctx, request.query, query_vector, None, request.entity_limit, mode, weight
    )
    rows = [row for row, _ in found]
    user: Entity | None = None
    if request.user_entity:
        mine = ranked_entities(ctx, USER_QUERY, user_vector, USER_TYPE, 1, mode, weight)
        if mine:
            row, score = mine[0]
            user = to_entity(row, score)
            rows.append(row)
    return TurnEntities(
        entities=[to_entity(row, score) for row, score in found],
        user=user,
        details=details_of(ctx, rows),
    )
