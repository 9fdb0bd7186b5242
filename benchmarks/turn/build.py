"""What one size builds, and writing it to a backend (the SQLite store or hosted NAMS).

One ``SizeSpec`` decides the whole content of a size's database, so the same spec gives
the same store on every backend and a kept database can be matched against it later.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import time
from dataclasses import dataclass
from typing import Any

from nams_local.backend import MAX_BULK_MESSAGES, MemoryBackend
from nams_local.embeddings import BaseEmbedder
from nams_local.models import NewMessage

from .._common import Progress
from .._workload import Workload, chunks, generate, reasoning_steps, relationships

__all__ = ["SizeSpec", "build_workload", "spec_for"]


@dataclass(frozen=True)
class SizeSpec:
    """Everything that decides the content of one size's database."""

    messages: int
    users: int
    conversations_per_user: int
    entities: int
    relationships_per_entity: int
    steps_per_conversation: int
    seed: int
    embedder: str
    dimension: int
    vector_index: str

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def workload(self) -> Workload:
        """The seeded workload this spec builds (the same for every backend)."""
        return generate(
            users=self.users,
            conversations_per_user=self.conversations_per_user,
            messages=self.messages,
            entities=self.entities,
            seed=self.seed,
        )


def spec_for(args: argparse.Namespace, messages: int, embedder: BaseEmbedder) -> SizeSpec:
    """The spec of the ``messages`` size: users and entities scale with it unless given."""
    return SizeSpec(
        messages=messages,
        users=args.users if args.users is not None else max(1, messages // 100),
        conversations_per_user=args.conversations_per_user,
        entities=args.entities if args.entities is not None else max(2, messages // 10),
        relationships_per_entity=args.relationships_per_entity,
        steps_per_conversation=args.steps_per_conversation,
        seed=args.seed,
        embedder=embedder.name,
        dimension=embedder.dimension,
        vector_index=args.vector_index,
    )


def _rate(count: int, seconds: float) -> dict[str, float]:
    return {"count": count, "seconds": seconds, "per_second": count / seconds if seconds else 0.0}


async def build_workload(
    backend: MemoryBackend, workload: Workload, spec: SizeSpec, quiet: bool
) -> tuple[list[list[str]], dict[str, Any]]:
    """Write the workload; ``([[conversation id, user id], ...], build timings)``."""
    timings: dict[str, Any] = {}

    progress = Progress("create_conversation", len(workload.conversations), enabled=not quiet)
    start = time.perf_counter()
    conversations: list[list[str]] = []
    for i, conv in enumerate(workload.conversations, 1):
        created = await backend.create_conversation(conv.user_id, {"topic": conv.topic})
        conversations.append([created.id, conv.user_id])
        progress.update(i)
    timings["conversations"] = _rate(len(conversations), time.perf_counter() - start)

    progress = Progress("add_messages", workload.message_count, enabled=not quiet)
    start = time.perf_counter()
    done = calls = 0
    for (conv_id, _), conv in zip(conversations, workload.conversations, strict=True):
        for chunk in chunks(conv.turns, MAX_BULK_MESSAGES):
            new = [NewMessage(role=t.role, content=t.content) for t in chunk]
            done += len(await backend.add_messages(conv_id, new))
            calls += 1
            progress.update(done)
    timings["messages"] = _rate(done, time.perf_counter() - start)
    timings["message_bulk_calls"] = calls

    progress = Progress("add_entity", len(workload.entities), enabled=not quiet)
    start = time.perf_counter()
    entity_ids: list[str] = []
    for i, entity in enumerate(workload.entities, 1):
        added = await backend.add_entity(entity.name, entity.type, entity.description)
        entity_ids.append(added.id)
        progress.update(i)
    timings["entities"] = _rate(len(entity_ids), time.perf_counter() - start)

    edges = relationships(
        random.Random(spec.seed + 11), workload.entities, spec.relationships_per_entity
    )
    if not backend.capabilities.relationship_writes:  # hosted NAMS may not offer them
        edges = ()
    progress = Progress("add_relationship", len(edges), enabled=not quiet)
    start = time.perf_counter()
    for i, edge in enumerate(edges, 1):
        await backend.add_relationship(entity_ids[edge.source], entity_ids[edge.target], edge.type)
        progress.update(i)
    timings["relationships"] = _rate(len(edges), time.perf_counter() - start)

    step_rng = random.Random(spec.seed + 10)
    total_steps = len(conversations) * spec.steps_per_conversation
    progress = Progress("record_step", total_steps, enabled=not quiet)
    start = time.perf_counter()
    recorded = 0
    for conv_id, _ in conversations:
        for step in reasoning_steps(step_rng, spec.steps_per_conversation):
            await backend.record_step(conv_id, step.reasoning, step.action_taken, step.result)
            recorded += 1
            progress.update(recorded)
    timings["steps"] = _rate(recorded, time.perf_counter() - start)
    return conversations, timings
