"""Routes the hosted API lacks, each marked ``x-nams-local-extension`` and tagged.

Hosted clients never need them. The nams-local hosted client asks ``GET /v1/capabilities``
first and uses the others only when the answer says so, so one client works against
hosted NAMS (which answers 404 there) and against this server. Every extension is backed
by a ``MemoryBackend`` method behind a capability flag; without the capability the backend
raises ``NotSupportedError`` and the route answers 501.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path, Query

from nams_local.backend import message_deleter
from nams_local.errors import NotFoundError, NotSupportedError
from nams_local.models import Entity, EntityGraph, Relationship
from nams_local.validation import MAX_ID_CHARS

from .. import responses as R
from ..bodies import (
    NOT_BLANK,
    AsOf,
    CreateRelationshipBody,
    ExpandGraphBody,
    InvalidateRelationshipBody,
    UserMessageSearchBody,
)
from ..deps import Backend, Root
from ..wire import status
from .base import ENTITY_ID, EXTENSION, MESSAGE_ID, answers, api_router

__all__ = ["router"]

router = api_router(tags=["Extensions"])


@router.get("/capabilities", openapi_extra=EXTENSION, **answers(R.CapabilitiesResponse))
async def capabilities(root: Root) -> dict[str, bool]:
    flags = root.capabilities
    return {
        "relationshipWrites": flags.relationship_writes,
        "entityByName": flags.entity_by_name,
        "userMessageSearch": flags.user_message_search,
        "graphNeighbourhood": flags.graph_neighbourhood,
        "vectorSearch": flags.vector_search,
        "cypherQuery": flags.cypher_query,
        "relationshipValidity": flags.relationship_validity,
        "userPurge": flags.user_purge,
        "messageDelete": flags.message_delete,
        # Search bodies take ``mode`` (text | vector | hybrid) on this server.
        "searchModes": True,
    }


@router.post(
    "/relationships",
    status_code=201,
    openapi_extra=EXTENSION,
    **answers(Relationship, 501, status=201),
)
async def create_relationship(body: CreateRelationshipBody, backend: Backend) -> dict[str, Any]:
    relationship = await backend.add_relationship(
        body.source_id,
        body.target_id,
        body.type,
        body.properties,
        body.confidence,
        valid_from=body.valid_from,
        valid_until=body.valid_until,
        supersede=body.supersede,
    )
    return relationship.to_wire()


@router.post(
    "/relationships/{id}/invalidate", openapi_extra=EXTENSION, **answers(Relationship, 404, 501)
)
async def invalidate_relationship(
    id: str, backend: Backend, body: InvalidateRelationshipBody | None = None
) -> dict[str, Any]:
    """The relationship held until ``validUntil`` (default today) and holds no more; it
    stays, for questions about the past (delete removes it)."""
    until = body.valid_until if body is not None else None
    return (await backend.invalidate_relationship(id, until)).to_wire()


@router.delete("/relationships/{id}", openapi_extra=EXTENSION, **answers(R.StatusResponse, 501))
async def delete_relationship(id: str, backend: Backend) -> dict[str, Any]:
    await backend.delete_relationship(id)
    return status("deleted")


#: A path id as the OpenAPI document declares it (the backend enforces it: else 400).
_PATH_ID: dict[str, Any] = {"minLength": 1, "maxLength": MAX_ID_CHARS, "pattern": NOT_BLANK}


@router.delete(
    f"/conversations/{{id}}/messages/{MESSAGE_ID}",
    openapi_extra=EXTENSION,
    **answers(R.StatusResponse, 404, 501),
)
async def delete_message(
    id: Annotated[str, Path(json_schema_extra=_PATH_ID)],
    message_id: Annotated[str, Path(alias="messageId", json_schema_extra=_PATH_ID)],
    backend: Backend,
) -> dict[str, Any]:
    """One message out of the conversation; what was extracted from it stays. Idempotent
    for a message that is gone (W2); an unknown conversation, or a message of another
    conversation, is a 404 with nothing deleted (M1)."""
    deleter = message_deleter(backend)
    if deleter is None:
        raise NotSupportedError("this backend cannot delete a single message")
    await deleter.delete_message(id, message_id)
    return status("deleted")


@router.get("/entities/by-name", openapi_extra=EXTENSION, **answers(Entity, 501))
async def get_entity_by_name(
    backend: Backend,
    name: Annotated[
        str,
        Query(
            description="case- and space-insensitive exact match",
            json_schema_extra={"pattern": NOT_BLANK},
        ),
    ],
    type: Annotated[str | None, Query()] = None,
) -> dict[str, Any]:
    entity = await backend.get_entity_by_name(name, type)
    if entity is None:
        raise NotFoundError(f"no entity named {name!r}")
    return entity.to_wire()


@router.get(
    f"/entities/{ENTITY_ID}/neighbourhood", openapi_extra=EXTENSION, **answers(EntityGraph, 501)
)
async def entity_neighbourhood(
    id: str,
    backend: Backend,
    depth: Annotated[
        int, Query(description="1 to 5", json_schema_extra={"minimum": 1, "maximum": 5})
    ] = 1,
    as_of: AsOf = None,
) -> dict[str, Any]:
    return (await backend.entity_neighbourhood(id, depth, as_of)).to_wire()


@router.post(
    "/users/{userId}/messages/search", openapi_extra=EXTENSION, **answers(R.UserMessageSearch, 501)
)
async def search_user_messages(
    user_id: Annotated[str, Path(alias="userId")],
    body: UserMessageSearchBody,
    backend: Backend,
) -> dict[str, Any]:
    groups = await backend.search_user_messages(
        user_id,
        body.query,
        conversation_limit=body.conversation_limit,
        per_conversation_limit=body.per_conversation_limit,
        exclude_conversation_id=body.exclude_conversation_id,
        include_steps=body.include_steps,
    )
    return {"conversations": [group.to_wire() for group in groups]}


@router.post("/graph/expand", openapi_extra=EXTENSION, **answers(EntityGraph, 501))
async def expand_graph(body: ExpandGraphBody, backend: Backend) -> dict[str, Any]:
    """One hop around ``nodeId``, less the nodes the caller already shows (``loadedIds``).

    The official Python SDK's ``expand_graph`` calls this route; the hosted spec does not
    list it.
    """
    graph = (await backend.entity_neighbourhood(body.node_id, 1)).to_wire()
    loaded = set(body.loaded_ids)
    graph["nodes"] = [node for node in graph["nodes"] if node["id"] not in loaded]
    return graph
