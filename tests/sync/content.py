"""A seeded source store and a comparable picture of any backend's content.

``snapshot`` reads through the ``MemoryBackend`` protocol only, so the local source and a
target behind ``nams-local serve`` (through the hosted client) are pictured the same way:
everything but ids and times, the ids replaced by what they point at (an entity by its
name, a tool call under its step), so "the target holds exactly the source's content"
is one equality, and a duplicate anywhere makes it fail.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from backends.sqlite import SQLiteBackend
from nams_local.backend import MAX_LIST_LIMIT, MemoryBackend
from nams_local.models import NewMessage

__all__ = ["seed", "snapshot"]


async def seed(path: Path, *, conversations: int = 3, messages: int = 5) -> None:
    """A store with entities, relationships (one with validity), conversations with
    metadata, messages (some with metadata), reasoning steps and tool calls."""
    store = SQLiteBackend(path, embeddings=False, extraction="off")
    try:
        alice = await store.add_entity("Alice Keller", "person", "an engineer", {"team": "core"})
        acme = await store.add_entity("Acme", "organization", "a maker of anvils")
        berlin = await store.add_entity("Berlin", "location")
        await store.add_relationship(alice.id, acme.id, "WORKS_AT", confidence=0.9)
        await store.add_relationship(
            alice.id, berlin.id, "LIVES_IN", valid_from="2020-01", supersede=False
        )
        for c in range(conversations):
            conv = await store.create_conversation(
                f"user-{c % 2}", {"topic": f"topic {c}", "rank": c}
            )
            batch = [
                NewMessage(
                    role="user" if m % 2 == 0 else "assistant",
                    content=f"conversation {c} message {m}: the anvil weighs {c * 100 + m} kg",
                    metadata={"turn": m} if m % 3 == 0 else None,
                )
                for m in range(messages)
            ]
            for start in range(0, len(batch), 100):
                await store.add_messages(conv.id, batch[start : start + 100])
            if c % 2 == 0:
                step = await store.record_step(conv.id, f"plan {c}", "search", f"found {c}")
                await store.record_tool_call(
                    "web_search", json.dumps({"q": f"anvil {c}"}), '"ok"', "success", step.id, 12
                )
                await store.record_step(conv.id, f"answer {c}", "reply")
    finally:
        await store.aclose()


async def snapshot(backend: MemoryBackend) -> dict[str, Any]:
    names = {e.id: e.name for e in await backend.list_entities()}
    entities = sorted(
        (e.name, e.type, e.description or "", sorted(e.properties.items()))
        for e in await backend.list_entities()
    )
    graph = await backend.get_graph()
    edges = sorted(
        (names.get(e.source, e.source), e.type, names.get(e.target, e.target), e.valid_from)
        for e in graph.edges
    )
    conversations = []
    for conv in await backend.list_conversations(limit=MAX_LIST_LIMIT):
        messages = [
            (m.role, m.content, json.dumps(m.metadata, sort_keys=True))
            for m in reversed(await backend.list_messages(conv.id, limit=MAX_LIST_LIMIT))
        ]
        trace = await backend.get_trace(conv.id)
        steps = [
            (
                s.reasoning,
                s.action_taken,
                s.result or "",
                [
                    (t.tool_name, t.input, t.output, t.status.value, t.duration_ms)
                    for t in trace.tool_calls
                    if t.step_id == s.id
                ],
            )
            for s in await backend.list_steps(conv.id)
        ]
        conversations.append(
            (conv.user_id, json.dumps(dict(conv.metadata), sort_keys=True), messages, steps)
        )
    return {"entities": entities, "edges": edges, "conversations": sorted(conversations)}
