"""Long-term memory entities: ``/v1/entities/...``.

``/v1/entities/graph`` is declared before ``/v1/entities/{id}`` so it is not read as an id.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Query

from nams_local.errors import InvalidInputError
from nams_local.models import (
    Entity,
    EntityDetails,
    EntityGraph,
    EntityHistory,
    FeedbackResult,
    MergeResult,
)

from .. import responses as R
from ..bodies import (
    AsOf,
    CreateEntityBody,
    EntityFeedbackBody,
    MergeEntitiesBody,
    SearchEntitiesBody,
    UpdateEntityBody,
)
from ..deps import Backend
from ..wire import entity_details_wire, status
from .base import ENTITY_ID, answers, api_router

__all__ = ["router"]

router = api_router(tags=["Entities"])


@router.get("/entities", **answers(R.EntityList))
async def list_entities(
    backend: Backend,
    type: Annotated[str | None, Query(description="only this type (case-insensitive)")] = None,
) -> dict[str, Any]:
    return {"entities": [e.to_wire() for e in await backend.list_entities(type)]}


@router.post("/entities", status_code=201, **answers(Entity, status=201))
async def create_entity(body: CreateEntityBody, backend: Backend) -> dict[str, Any]:
    entity_type = body.chosen_type
    if entity_type is None:
        raise InvalidInputError("Missing required fields: name and type")
    entity = await backend.add_entity(body.name, entity_type, body.description, body.properties)
    return entity.to_wire()


@router.get("/entities/graph", **answers(EntityGraph))
async def get_graph(
    backend: Backend,
    as_of: AsOf = None,
) -> dict[str, Any]:
    return (await backend.get_graph(as_of)).to_wire()


@router.post("/entities/search", **answers(R.EntitySearch, 501))
async def search_entities(body: SearchEntitiesBody, backend: Backend) -> dict[str, Any]:
    result = await backend.search_entities(body.query, body.type, body.limit, body.mode)
    return {"entities": [e.to_wire() for e in result.items], "searchType": result.search_type}


@router.get(f"/entities/{ENTITY_ID}", **answers(EntityDetails))
async def get_entity(id: str, backend: Backend) -> dict[str, Any]:
    return entity_details_wire(await backend.get_entity(id))


@router.put(f"/entities/{ENTITY_ID}", **answers(R.StatusResponse))
async def update_entity(id: str, body: UpdateEntityBody, backend: Backend) -> dict[str, Any]:
    await backend.update_entity(id, body.name, body.description)
    return status("updated")


@router.delete(f"/entities/{ENTITY_ID}", **answers(R.StatusResponse))
async def delete_entity(id: str, backend: Backend) -> dict[str, Any]:
    await backend.delete_entity(id)
    return status("deleted")


@router.put(f"/entities/{ENTITY_ID}/feedback", **answers(FeedbackResult))
async def entity_feedback(id: str, body: EntityFeedbackBody, backend: Backend) -> dict[str, Any]:
    result = await backend.entity_feedback(id, body.user_score, body.confirmed)
    return result.to_wire()


@router.get(f"/entities/{ENTITY_ID}/history", **answers(EntityHistory))
async def get_entity_history(id: str, backend: Backend) -> dict[str, Any]:
    return (await backend.get_entity_history(id)).to_wire()


@router.post(f"/entities/{ENTITY_ID}/merge", **answers(MergeResult))
async def merge_entities(id: str, body: MergeEntitiesBody, backend: Backend) -> dict[str, Any]:
    return (await backend.merge_entities(id, body.target_id)).to_wire()
