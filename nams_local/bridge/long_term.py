"""Silver long-term memory and the Gold graph writes of the TCK bridge.

Entities follow the legacy rules (``SQLiteBackend.legacy``): identity is the exact pair
(name, type), never a similar name; merges happen only when asked for. Preferences and
facts are global to the bridge's workspace.
"""

from __future__ import annotations

from nams_local.errors import InvalidInputError

from . import wire
from .bodies import (
    AddEntity,
    AddFact,
    AddPreference,
    AddRelationship,
    GetRelatedEntities,
    MergeDuplicates,
    Name,
    SearchEntities,
    SearchPreferences,
)
from .registry import Bridge, Reply, bridge_method

__all__: list[str] = []


@bridge_method(AddEntity)
async def add_entity(b: Bridge, body: AddEntity) -> Reply:
    found = await b.legacy.upsert_entity(body.name, body.entity_type, body.description)
    return wire.entity(found)


@bridge_method(AddPreference)
async def add_preference(b: Bridge, body: AddPreference) -> Reply:
    stored = await b.legacy.add_preference(body.category, body.preference, body.context)
    return wire.preference(stored)


@bridge_method(AddFact)
async def add_fact(b: Bridge, body: AddFact) -> Reply:
    return wire.fact(await b.legacy.add_fact(body.subject, body.predicate, body.obj))


@bridge_method(SearchEntities)
async def search_entities(b: Bridge, body: SearchEntities) -> Reply:
    return [wire.entity(e) for e in await b.legacy.search_entities(body.query, body.limit)]


@bridge_method(SearchPreferences)
async def search_preferences(b: Bridge, body: SearchPreferences) -> Reply:
    found = await b.legacy.search_preferences(body.query, body.category, body.limit)
    return [wire.preference(p) for p in found]


@bridge_method(Name)
async def get_entity_by_name(b: Bridge, body: Name) -> Reply:
    found = await b.legacy.get_entity_by_name(body.name)
    return wire.entity(found) if found is not None else None


@bridge_method(GetRelatedEntities)
async def get_related_entities(b: Bridge, body: GetRelatedEntities) -> Reply:
    found = await b.legacy.related_entities(body.entity_id, body.relationship_type, body.depth)
    return [wire.entity(e) for e in found]


@bridge_method(AddRelationship)
async def add_relationship(b: Bridge, body: AddRelationship) -> Reply:
    """Upsert on (source, target, type): re-adding returns the existing edge."""
    if body.source_id == body.target_id:
        raise InvalidInputError("a relationship needs two different entities")
    existing = await b.legacy.find_relationship(
        body.source_id, body.target_id, body.relationship_type
    )
    if existing is not None:
        return wire.relationship(existing)
    created = await b.backend.add_relationship(
        body.source_id, body.target_id, body.relationship_type, body.properties
    )
    return wire.relationship(created)


@bridge_method(MergeDuplicates)
async def merge_duplicate_entities(b: Bridge, body: MergeDuplicates) -> Reply:
    merged = await b.legacy.merge_entities(body.source_id, body.target_id, body.canonical_name)
    return wire.entity(merged)
