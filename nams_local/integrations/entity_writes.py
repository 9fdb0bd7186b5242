"""Entity writes shared by the flat memory path (§5.3) and graph extraction (§6.2).

Both paths do the same three things for one name: reuse an existing entity when the name
(or canonical name) and type match exactly, else create one, then record the memory's
confidence as feedback. Keeping them here means the two paths cannot drift apart.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..backend import MemoryBackend
from ..log import MemoryLogger
from ..models import Entity

__all__ = ["entity_matches", "find_entity", "send_feedback", "tag_properties", "upsert_entity"]

#: Candidates read back by ``find_entity``'s search (§6.3).
FIND_SEARCH_LIMIT = 5
#: ``confirmed`` is sent as true from this confidence up (§5.3 step 3).
CONFIRMED_FROM = 0.8


def _same(a: str | None, b: str) -> bool:
    return a is not None and a.strip().lower() == b.strip().lower()


def entity_matches(entity: Entity, name: str, type: str) -> bool:
    """§6.3's predicate: same type, and same name or canonical name (trimmed, any case)."""
    return _same(entity.type, type) and (
        _same(entity.name, name) or _same(entity.canonical_name, name)
    )


async def find_entity(backend: MemoryBackend, name: str, type: str) -> Entity | None:
    """An existing entity to reuse for ``name``/``type``, or None (§6.3).

    The by-name lookup runs only when the backend has it (hosted NAMS does not; the TS
    provider calls it anyway and swallows the error). Unlike the TS SDK we pass the type
    too, so a same-named entity of another type does not hide the right one. A search
    only proposes candidates: near neighbours ("Alexandra" for "Alex") never match.
    """
    if backend.capabilities.entity_by_name:
        try:
            found = await backend.get_entity_by_name(name, type)
        except Exception:
            found = None
        else:
            if found is not None:
                return found if entity_matches(found, name, type) else None
    try:
        result = await backend.search_entities(name, limit=FIND_SEARCH_LIMIT)
    except Exception:
        return None
    return next((e for e in result.items if entity_matches(e, name, type)), None)


def tag_properties(tags: Sequence[str]) -> dict[str, str] | None:
    """Entity properties carrying a memory's tags: ``{"tags": "<JSON array>"}``, or None.

    The TS provider validates ``tags`` and drops them; we keep them on the entities a
    memory creates, as JSON text because entity properties are string → string.
    """
    if not tags:
        return None
    return {"tags": json.dumps(list(tags), ensure_ascii=False, separators=(",", ":"))}


async def send_feedback(
    backend: MemoryBackend, logger: MemoryLogger, entity: Entity, confidence: float | None
) -> None:
    """Record the memory's confidence on the entity; a failure is one warning."""
    if not entity.id or confidence is None:
        return
    try:
        await backend.entity_feedback(
            entity.id, user_score=confidence, confirmed=confidence >= CONFIRMED_FROM
        )
    except Exception as exc:
        logger.warn("setEntityFeedback failed", exc)


async def upsert_entity(
    backend: MemoryBackend,
    logger: MemoryLogger,
    *,
    name: str,
    type: str,
    description: str,
    confidence: float | None,
    tags: Sequence[str] = (),
) -> Entity:
    """Reuse or create the entity, then send feedback. Write errors propagate."""
    entity = await find_entity(backend, name, type)
    if entity is None:
        entity = await backend.add_entity(
            name, type, description=description, properties=tag_properties(tags)
        )
    await send_feedback(backend, logger, entity, confidence)
    return entity
