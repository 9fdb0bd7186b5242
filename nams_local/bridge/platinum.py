"""Platinum methods of the TCK bridge: the hosted service's operations, bridge-shaped.

They run on the engine's own ``MemoryBackend`` methods where those fit (observations,
reflections, agent steps, feedback, history, graph, Cypher) and on the legacy sessions
where the bridge differs from the hosted API (JSON metadata, insertion order, newest-first
conversations). Every ``conversation_id`` is a conversation's UUID. How a step is linked to
the entities it influenced is the engine's rule (see ``backends/sqlite/reasoning.py``): an
entity counts when its name appears as a whole word in the step or its tool calls.
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any

from nams_local.backend import MAX_LIST_LIMIT
from nams_local.errors import NotFoundError
from nams_local.models import NewMessage, StepExplanation

from . import wire
from .bodies import (
    BulkAddMessages,
    ConversationId,
    CreateConversation,
    CypherQuery,
    Empty,
    EntityId,
    GetObservations,
    Limit,
    ListEntities,
    MergeEntities,
    RecordStep,
    SetEntityFeedback,
    StepId,
    UpdateEntity,
)
from .registry import NO_CONTENT, Bridge, Reply, bridge_method

__all__: list[str] = []


# -- conversations ----------------------------------------------------------------------
@bridge_method(CreateConversation)
async def create_conversation(b: Bridge, body: CreateConversation) -> Reply:
    created = await b.legacy.create_session_conversation(body.user_id, body.metadata)
    return wire.conversation(created, b.workspace)


@bridge_method(Limit)
async def list_conversations(b: Bridge, body: Limit) -> Reply:
    """Newest created first, without messages."""
    found = await b.legacy.list_session_conversations(body.limit)
    return [wire.conversation(t, b.workspace) for t in found]


@bridge_method(ConversationId)
async def get_conversation_metadata(b: Bridge, body: ConversationId) -> Reply:
    return wire.conversation(await b.legacy.get_session_info(body.conversation_id), b.workspace)


@bridge_method(ConversationId)
async def delete_conversation(b: Bridge, body: ConversationId) -> Reply:
    with suppress(NotFoundError):  # idempotent: already gone
        await b.backend.delete_conversation(body.conversation_id)
    return NO_CONTENT


@bridge_method(ConversationId)
async def get_context(b: Bridge, body: ConversationId) -> Reply:
    """Reflections, observations and recent messages (chronological); all three lists are
    empty for an unknown conversation."""
    try:
        context = await b.backend.get_context(body.conversation_id)
    except NotFoundError:
        return {"reflections": [], "observations": [], "recent_messages": []}
    return {
        "reflections": [wire.reflection(r) for r in context.reflections],
        "observations": [wire.observation(o) for o in context.observations],
        "recent_messages": [wire.message(m) for m in reversed(context.recent_messages)],
    }


@bridge_method(BulkAddMessages)
async def bulk_add_messages(b: Bridge, body: BulkAddMessages) -> Reply:
    """Appends in input order (at most 100; more is a 400); unknown conversation: 404."""
    batch = [NewMessage(role=m.role, content=m.content, metadata=m.metadata) for m in body.messages]
    stored = await b.legacy.add_session_messages(body.conversation_id, batch, create=False)
    return [wire.message(m) for m in stored]


@bridge_method(GetObservations)
async def get_observations(b: Bridge, body: GetObservations) -> Reply:
    limit = MAX_LIST_LIMIT if body.limit is None else min(body.limit, MAX_LIST_LIMIT)
    if limit <= 0:
        await b.legacy.get_session_info(body.conversation_id)  # 404 when unknown
        return []
    found = await b.backend.list_observations(body.conversation_id, limit)
    return [wire.observation(o) for o in found]


@bridge_method(ConversationId)
async def get_reflections(b: Bridge, body: ConversationId) -> Reply:
    return [wire.reflection(r) for r in await b.backend.list_reflections(body.conversation_id)]


# -- entity graph -------------------------------------------------------------------------
@bridge_method(ListEntities)
async def list_entities(b: Bridge, body: ListEntities) -> Reply:
    return [wire.entity(e) for e in await b.legacy.list_entities(body.type, body.limit)]


@bridge_method(EntityId)
async def get_entity(b: Bridge, body: EntityId) -> Reply:
    return wire.entity(await b.legacy.get_entity(body.entity_id))


@bridge_method(UpdateEntity)
async def update_entity(b: Bridge, body: UpdateEntity) -> Reply:
    """Changes only the fields given and answers the full entity."""
    if body.name is not None or body.description is not None:
        await b.backend.update_entity(body.entity_id, body.name, body.description)
    return wire.entity(await b.legacy.get_entity(body.entity_id))


@bridge_method(EntityId)
async def delete_entity(b: Bridge, body: EntityId) -> Reply:
    with suppress(NotFoundError):  # idempotent: already gone
        await b.backend.delete_entity(body.entity_id)
    return NO_CONTENT


@bridge_method(SetEntityFeedback)
async def set_entity_feedback(b: Bridge, body: SetEntityFeedback) -> Reply:
    result = await b.backend.entity_feedback(body.entity_id, body.user_score, body.confirmed)
    return {"id": result.id, "updated": bool(result.updated)}


@bridge_method(EntityId)
async def get_entity_history(b: Bridge, body: EntityId) -> Reply:
    return wire.entity_history(await b.backend.get_entity_history(body.entity_id))


@bridge_method(MergeEntities)
async def merge_entities(b: Bridge, body: MergeEntities) -> Reply:
    """The same merge as ``merge_duplicate_entities``; it leaves ``SAME_AS`` source → target."""
    await b.legacy.merge_entities(body.source_id, body.target_id)
    return {"source_id": body.source_id, "target_id": body.target_id, "status": "merged"}


@bridge_method(Empty)
async def get_entity_graph(b: Bridge, body: Empty) -> Reply:
    return wire.entity_graph(await b.backend.get_graph())


# -- reasoning provenance -----------------------------------------------------------------
@bridge_method(RecordStep)
async def record_step(b: Bridge, body: RecordStep) -> Reply:
    step = await b.backend.record_step(
        body.conversation_id, body.reasoning, body.action_taken, body.result
    )
    return wire.agent_step(step, body.conversation_id)


@bridge_method(ConversationId)
async def list_steps(b: Bridge, body: ConversationId) -> Reply:
    """Oldest first; ``[]`` for an unknown conversation."""
    try:
        steps = await b.backend.list_steps(body.conversation_id)
    except NotFoundError:
        return []
    return [wire.agent_step(s, body.conversation_id) for s in steps]


async def _explained(b: Bridge, steps: list[StepExplanation]) -> list[dict[str, Any]]:
    """Steps with their tool calls and influenced entities as full Entity objects."""
    ids = [i.id for s in steps for i in s.influenced_entities]
    full = await b.legacy.entities_by_id(ids)
    return [
        wire.agent_step(s, s.conversation_id or "")
        | {
            "tool_calls": [wire.agent_tool_call(c) for c in s.tool_calls],
            "influenced_entities": [
                wire.entity(full[i.id]) for i in s.influenced_entities if i.id in full
            ],
        }
        for s in steps
    ]


@bridge_method(StepId)
async def explain_step(b: Bridge, body: StepId) -> Reply:
    (explained,) = await _explained(b, [await b.backend.explain_step(body.step_id)])
    return explained


@bridge_method(ConversationId)
async def get_trace_by_conversation(b: Bridge, body: ConversationId) -> Reply:
    """Every step and tool call of the conversation; empty lists when it is unknown."""
    try:
        found = await b.backend.get_trace(body.conversation_id)
    except NotFoundError:
        return {"conversation_id": body.conversation_id, "steps": [], "tool_calls": []}
    return {
        "conversation_id": found.conversation_id,
        "steps": [wire.agent_step(s, found.conversation_id) for s in found.steps],
        "tool_calls": [wire.agent_tool_call(c) for c in found.tool_calls],
    }


@bridge_method(EntityId)
async def get_entity_provenance(b: Bridge, body: EntityId) -> Reply:
    """The steps that influenced the entity (oldest first); ``[]`` when it is unknown."""
    try:
        found = await b.backend.get_provenance(body.entity_id)
    except NotFoundError:
        return {"entity_id": body.entity_id, "steps": []}
    return {"entity_id": found.entity_id, "steps": await _explained(b, found.steps)}


@bridge_method(CypherQuery)
async def cypher_query(b: Bridge, body: CypherQuery) -> Reply:
    """Read-only Cypher over the entity graph (the engine's subset; writes are a 400).
    Rows are positional arrays lined up with ``columns``."""
    result = await b.backend.query(body.cypher, body.params)
    columns = [str(c) for c in result.columns]
    return {
        "columns": columns,
        "rows": [[row.get(c) for c in columns] for row in result.rows],
        "stats": dict(result.stats) if result.stats else None,
    }
