"""Conversations, messages and the memory tiers: ``/v1/conversations/...``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Query, Response

from nams_local.backend import DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT
from nams_local.models import Context, Conversation, Message, NewMessage

from .. import responses as R
from ..bodies import AddMessageBody, BulkMessagesBody, CreateConversationBody, SearchMessagesBody
from ..deps import Backend, Caller
from ..large_json import wire_json
from ..wire import conversation_wire, extraction_status_wire, status
from .base import answers, api_router

__all__ = ["router"]

router = api_router(tags=["Conversations"])

Limit = Annotated[
    int,
    Query(description="1 to 200", json_schema_extra={"minimum": 1, "maximum": MAX_LIST_LIMIT}),
]


@router.post("/conversations", status_code=201, **answers(Conversation, status=201))
async def create_conversation(
    backend: Backend, caller: Caller, body: CreateConversationBody | None = None
) -> dict[str, Any]:
    body = body or CreateConversationBody()
    conversation = await backend.create_conversation(body.user_id, body.metadata)
    return conversation_wire(conversation, caller)


@router.get("/conversations", **answers(R.ConversationList))
async def list_conversations(
    backend: Backend,
    caller: Caller,
    limit: Limit = DEFAULT_LIST_LIMIT,
    user_id: Annotated[str | None, Query(description="only this user's conversations")] = None,
    user_id_camel: Annotated[
        str | None, Query(alias="userId", description="same as user_id (Python SDK)")
    ] = None,
) -> dict[str, Any]:
    user = user_id if user_id is not None else user_id_camel
    conversations = await backend.list_conversations(user, limit)
    return {"conversations": [conversation_wire(c, caller) for c in conversations]}


@router.get("/conversations/{id}", **answers(Conversation))
async def get_conversation(id: str, backend: Backend, caller: Caller) -> dict[str, Any]:
    return conversation_wire(await backend.get_conversation(id), caller)


@router.delete("/conversations/{id}", **answers(R.StatusResponse))
async def delete_conversation(id: str, backend: Backend) -> dict[str, Any]:
    await backend.delete_conversation(id)
    return status("deleted")


@router.post("/conversations/{id}/messages", status_code=201, **answers(Message, status=201))
async def add_message(id: str, body: AddMessageBody, backend: Backend) -> dict[str, Any]:
    message = await backend.add_message(id, body.role, body.content, body.metadata)
    return message.to_wire()


@router.post(
    "/conversations/{id}/messages/bulk", status_code=201, **answers(R.MessageList, status=201)
)
async def add_messages(
    id: str, body: BulkMessagesBody, backend: Backend
) -> dict[str, Any] | Response:
    new = [NewMessage(role=m.role, content=m.content, metadata=m.metadata) for m in body.messages]
    stored = await backend.add_messages(id, new)
    return await wire_json(
        {"messages": [m.to_wire() for m in stored]}, _chars(stored), status_code=201
    )


@router.get("/conversations/{id}/messages", **answers(R.MessageList))
async def list_messages(
    id: str, backend: Backend, limit: Limit = DEFAULT_LIST_LIMIT
) -> dict[str, Any] | Response:
    messages = await backend.list_messages(id, limit)
    return await wire_json({"messages": [m.to_wire() for m in messages]}, _chars(messages))


@router.post("/conversations/{id}/search", **answers(R.MessageSearch, 501))
async def search_messages(
    id: str, body: SearchMessagesBody, backend: Backend
) -> dict[str, Any] | Response:
    result = await backend.search_messages(id, body.query, body.limit, body.mode)
    payload = {"messages": [m.to_wire() for m in result.items], "searchType": result.search_type}
    return await wire_json(payload, _chars(result.items))


def _chars(messages: list[Message]) -> int:
    """The characters of the messages' texts (what makes their answer big)."""
    return sum(len(m.content) for m in messages)


@router.get("/conversations/{id}/context", **answers(Context))
async def get_context(id: str, backend: Backend) -> dict[str, Any]:
    return (await backend.get_context(id)).to_wire()


@router.get("/conversations/{id}/observations", **answers(R.ObservationList))
async def list_observations(
    id: str, backend: Backend, limit: Limit = DEFAULT_LIST_LIMIT
) -> dict[str, Any]:
    observations = await backend.list_observations(id, limit)
    return {"observations": [o.to_wire() for o in observations]}


@router.get("/conversations/{id}/reflections", **answers(R.ReflectionList))
async def list_reflections(id: str, backend: Backend) -> dict[str, Any]:
    reflections = await backend.list_reflections(id)
    return {"reflections": [r.to_wire() for r in reflections]}


@router.get("/conversations/{id}/extraction-status", **answers(R.ExtractionStatusResponse))
async def get_extraction_status(id: str, backend: Backend) -> dict[str, Any]:
    return extraction_status_wire(await backend.get_extraction_status(id))
