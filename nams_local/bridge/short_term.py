"""Lifecycle and Bronze (short-term memory) methods of the TCK bridge.

Sessions are the engine's legacy sessions (``SQLiteBackend.legacy``): messages in insertion
order with strictly increasing timestamps, any JSON metadata, empty content allowed, and a
read of an unknown session that answers an empty conversation without creating one.
``clear_all_data`` deletes everything in the bridge's workspace before it answers.
"""

from __future__ import annotations

from . import wire
from .bodies import (
    AddMessage,
    Empty,
    GetConversation,
    ListSessions,
    MessageId,
    SearchMessages,
    SessionId,
)
from .registry import NO_CONTENT, Bridge, Reply, bridge_method

__all__ = ["PROTOCOL_VERSION"]

#: The bridge protocol version this server speaks (0.2.0 includes the Platinum methods).
PROTOCOL_VERSION = "0.2.0"


@bridge_method(Empty)
async def setup(b: Bridge, body: Empty) -> Reply:
    return {"ok": True, "protocol_version": PROTOCOL_VERSION}


@bridge_method(Empty)
async def teardown(b: Bridge, body: Empty) -> Reply:
    """Keeps the server running and the data in place (the next run clears it)."""
    return NO_CONTENT


@bridge_method(Empty)
async def clear_all_data(b: Bridge, body: Empty) -> Reply:
    await b.legacy.clear_workspace()
    return NO_CONTENT


@bridge_method(AddMessage)
async def add_message(b: Bridge, body: AddMessage) -> Reply:
    stored = await b.legacy.add_session_message(
        body.session_id, body.role, body.content, body.metadata
    )
    return wire.message(stored)


@bridge_method(GetConversation)
async def get_conversation(b: Bridge, body: GetConversation) -> Reply:
    """The oldest ``limit`` messages (all when absent), in insertion order."""
    transcript = await b.legacy.get_session(body.session_id, body.limit)
    return wire.conversation(transcript, b.workspace)


@bridge_method(SearchMessages)
async def search_messages(b: Bridge, body: SearchMessages) -> Reply:
    found = await b.legacy.search_messages(body.query, body.session_id, body.limit, body.threshold)
    return [wire.message(m) for m in found]


@bridge_method(ListSessions)
async def list_sessions(b: Bridge, body: ListSessions) -> Reply:
    return [wire.session_info(i) for i in await b.legacy.list_sessions(body.limit)]


@bridge_method(MessageId)
async def delete_message(b: Bridge, body: MessageId) -> Reply:
    return {"deleted": await b.legacy.delete_message(body.message_id)}


@bridge_method(SessionId)
async def clear_session(b: Bridge, body: SessionId) -> Reply:
    await b.legacy.clear_session(body.session_id)
    return NO_CONTENT
