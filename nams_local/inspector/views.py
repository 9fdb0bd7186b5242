"""The read views: what each page shows, gathered through the ``MemoryBackend`` protocol.

Each function returns the template's context (plain data, no HTML). Every read is bounded:
lists stop at the protocol's ``MAX_LIST_LIMIT`` or a page of ``PAGE_SIZE``, and the
"what was extracted from each message" map looks at most ``MAX_MENTION_SCAN`` entities
(the page says when it stopped), since the protocol has no message-to-entity read.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from nams_local.backend import MAX_LIST_LIMIT, MemoryBackend, message_deleter
from nams_local.errors import InvalidInputError, NotSupportedError
from nams_local.models import (
    Conversation,
    Entity,
    EntityGraph,
    EntityRelationship,
    GraphEdge,
    GraphNode,
)

from .forms import PAGE_SIZE
from .picture import MAX_WORKSPACE_NODES, layout

__all__ = [
    "MAX_MENTION_SCAN",
    "conversation_view",
    "entities_view",
    "entity_view",
    "graph_view",
    "home_view",
    "users_view",
]

#: The conversation page maps messages to entities by reading this many entities' history.
MAX_MENTION_SCAN = 200
SAME_AS = "SAME_AS"


async def home_view(backend: MemoryBackend) -> dict[str, Any]:
    conversations = await backend.list_conversations(limit=MAX_LIST_LIMIT)
    entities = await backend.list_entities()
    users = {c.user_id for c in conversations}
    types = Counter(e.type for e in entities)
    return {
        "conversation_count": len(conversations),
        "conversations_capped": len(conversations) >= MAX_LIST_LIMIT,
        "user_count": len(users),
        "entity_count": len(entities),
        "types": sorted(types.items()),
        "recent": conversations[:10],
    }


async def users_view(backend: MemoryBackend, user: str | None) -> dict[str, Any]:
    conversations = await backend.list_conversations(user_id=user, limit=MAX_LIST_LIMIT)
    grouped: dict[str | None, list[Conversation]] = {}
    for conversation in conversations:
        grouped.setdefault(conversation.user_id, []).append(conversation)
    return {
        "user": user,
        "users": list(grouped.items()),
        "capped": len(conversations) >= MAX_LIST_LIMIT,
    }


async def _mentions_by_message(
    backend: MemoryBackend, message_ids: set[str]
) -> tuple[dict[str, list[Entity]], bool]:
    entities = sorted(await backend.list_entities(), key=lambda e: (e.name.lower(), e.id))
    found: dict[str, list[Entity]] = {}
    for entity in entities[:MAX_MENTION_SCAN]:
        history = await backend.get_entity_history(entity.id)
        for mention in history.mentions:
            if mention.message_id in message_ids:
                bucket = found.setdefault(mention.message_id, [])
                if entity not in bucket:
                    bucket.append(entity)
    return found, len(entities) > MAX_MENTION_SCAN


async def conversation_view(backend: MemoryBackend, conversation_id: str) -> dict[str, Any]:
    conversation = await backend.get_conversation(conversation_id)
    messages = list(reversed(await backend.list_messages(conversation_id, limit=MAX_LIST_LIMIT)))
    status = await backend.get_extraction_status(conversation_id)
    units = {unit.message_id: unit for unit in status.units}
    ids = {m.id for m in messages}
    mentions, scan_capped = await _mentions_by_message(backend, ids)
    graph = await backend.get_graph()
    names = {node.id: node.name for node in graph.nodes}
    learned: dict[str, list[tuple[GraphEdge, str, str]]] = {}
    for edge in graph.edges:
        if edge.source_message_id in ids:
            learned.setdefault(edge.source_message_id, []).append(
                (edge, names.get(edge.source, edge.source), names.get(edge.target, edge.target))
            )
    trace = await backend.get_trace(conversation_id)
    calls_by_step: dict[str | None, list[Any]] = {}
    for call in trace.tool_calls:
        calls_by_step.setdefault(call.step_id, []).append(call)
    return {
        "conversation": conversation,
        "messages": messages,
        "messages_capped": len(messages) >= MAX_LIST_LIMIT,
        "units": units,
        "mentions": mentions,
        "scan_capped": scan_capped,
        "learned": learned,
        "steps": trace.steps,
        "calls_by_step": calls_by_step,
        "loose_calls": calls_by_step.get(None, []),
        "can_delete_messages": message_deleter(backend) is not None,
    }


async def entities_view(
    backend: MemoryBackend, entity_type: str | None, query: str | None, page: int
) -> dict[str, Any]:
    everything = await backend.list_entities()
    types = sorted(Counter(e.type for e in everything).items())
    search_type: str | None = None
    if query is not None:
        result = await backend.search_entities(query, entity_type, limit=MAX_LIST_LIMIT)
        rows = result.items
        search_type = result.search_type
    else:
        rows = sorted(
            (await backend.list_entities(entity_type)) if entity_type else everything,
            key=lambda e: (e.type.lower(), e.name.lower(), e.id),
        )
    pages = max(1, -(-len(rows) // PAGE_SIZE))
    if page > pages:
        raise InvalidInputError(f"page {page} is past the last page ({pages})")
    return {
        "types": types,
        "type": entity_type,
        "q": query,
        "search_type": search_type,
        "rows": rows[(page - 1) * PAGE_SIZE : page * PAGE_SIZE],
        "total": len(rows),
        "page": page,
        "pages": pages,
    }


def _graph_from_relationships(
    centre: Entity, relationships: list[EntityRelationship]
) -> EntityGraph:
    """The one-hop picture from ``get_entity`` alone, for a backend without
    ``entity_neighbourhood`` (hosted NAMS)."""
    nodes = {centre.id: GraphNode(id=centre.id, name=centre.name, type=centre.type)}
    edges = []
    for index, rel in enumerate(relationships):
        nodes.setdefault(
            rel.target_id,
            GraphNode(
                id=rel.target_id, name=rel.target_name or rel.target_id, type=rel.target_type or "?"
            ),
        )
        source, target = (
            (rel.target_id, centre.id)
            if rel.direction == "incoming"
            else (centre.id, rel.target_id)
        )
        edges.append(
            GraphEdge(
                id=rel.id or f"r{index}",
                source=source,
                target=target,
                type=rel.type,
                current=rel.current,
            )
        )
    return EntityGraph(nodes=list(nodes.values()), edges=edges)


async def entity_view(backend: MemoryBackend, entity_id: str, depth: int) -> dict[str, Any]:
    details = await backend.get_entity(entity_id)
    history = await backend.get_entity_history(entity_id)
    try:
        provenance_steps = (await backend.get_provenance(entity_id)).steps
    except NotSupportedError:
        provenance_steps = []
    if backend.capabilities.graph_neighbourhood:
        neighbourhood = await backend.entity_neighbourhood(entity_id, depth=depth)
    else:
        neighbourhood = _graph_from_relationships(details, details.relationships)
    merges = [r for r in details.relationships if r.type == SAME_AS]
    others = [r for r in details.relationships if r.type != SAME_AS]
    duplicates = [
        e
        for e in (await backend.search_entities(details.name, details.type, limit=6)).items
        if e.id != details.id
    ]
    same_type = sorted(
        (e for e in await backend.list_entities(details.type) if e.id != details.id),
        key=lambda e: (e.name.lower(), e.id),
    )[:MAX_LIST_LIMIT]
    return {
        "entity": details,
        "current": [r for r in others if r.current is not False],
        "past": [r for r in others if r.current is False],
        "merges": merges,
        "mentions": history.mentions,
        "changes": history.changes or [],
        "provenance": provenance_steps,
        "picture": layout(neighbourhood, centre=details.id),
        "depth": depth,
        "duplicates": duplicates,
        "same_type": same_type,
        "can_delete_relationships": backend.capabilities.relationship_writes,
    }


async def graph_view(backend: MemoryBackend) -> dict[str, Any]:
    graph = await backend.get_graph()
    too_large = len(graph.nodes) > MAX_WORKSPACE_NODES
    return {
        "node_count": len(graph.nodes),
        "edge_count": len(graph.edges),
        "too_large": too_large,
        "limit": MAX_WORKSPACE_NODES,
        "picture": None if too_large or not graph.nodes else layout(graph),
    }
