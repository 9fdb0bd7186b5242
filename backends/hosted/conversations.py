"""Conversation, message and memory-tier routes (``/conversations/...``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nams_local.backend import DEFAULT_LIST_LIMIT, DEFAULT_SEARCH_LIMIT
from nams_local.models import (
    Context,
    Conversation,
    ExtractionStatus,
    Message,
    MetadataValue,
    NewMessage,
    Observation,
    Reflection,
    SearchMode,
    SearchResult,
)
from nams_local.validation import (
    check_limit,
    check_message,
    check_messages,
    check_metadata,
    check_mode,
    check_query,
)

from .base import HostedBase
from .parse import envelope, first, lenient
from .rest import compact, segment
from .shapes import read_extraction_status

__all__ = ["ConversationRoutes", "search_type"]


def search_type(body: object) -> str:
    """The mode a search ran, as the server named it (hosted documents ``searchType``)."""
    return str(first(body, "search_type", default="text"))


class ConversationRoutes(HostedBase):
    # -- conversations ---------------------------------------------------------------
    async def create_conversation(
        self, user_id: str | None = None, metadata: Mapping[str, MetadataValue] | None = None
    ) -> Conversation:
        sent = await self._conversation_metadata(metadata)
        body = await self._rest.call(
            "POST", "/conversations", body=compact({"userId": user_id, "metadata": sent})
        )
        return lenient(Conversation, body, user_id=user_id, metadata=sent)

    async def list_conversations(
        self, user_id: str | None = None, limit: int = DEFAULT_LIST_LIMIT
    ) -> list[Conversation]:
        """Filter and limit are sent as ``?user_id=&limit=`` and applied again here, since
        the hosted spec declares neither parameter on this route."""
        check_limit(limit)
        body = await self._rest.call(
            "GET", "/conversations", params={"user_id": user_id, "limit": limit}
        )
        items = [lenient(Conversation, raw) for raw in envelope(body, "conversations")]
        if user_id is not None:
            items = [c for c in items if c.user_id == user_id]
        return items[:limit]

    async def get_conversation(self, conversation_id: str) -> Conversation:
        body = await self._rest.call("GET", f"/conversations/{segment(conversation_id)}")
        return lenient(Conversation, body, id=conversation_id)

    async def delete_conversation(self, conversation_id: str) -> None:
        await self._delete(f"/conversations/{segment(conversation_id)}")

    # -- messages --------------------------------------------------------------------
    async def add_message(
        self,
        conversation_id: str,
        role: str,
        content: str,
        metadata: dict[str, Any] | None = None,
    ) -> Message:
        check_message(role, content)
        check_metadata(metadata)
        metadata = await self._message_metadata(metadata)
        sent = compact({"role": role, "content": content, "metadata": metadata})
        body = await self._rest.call(
            "POST", f"/conversations/{segment(conversation_id)}/messages", body=sent
        )
        return _message(body, conversation_id, sent)

    async def add_messages(
        self, conversation_id: str, messages: Sequence[NewMessage]
    ) -> list[Message]:
        check_messages(messages)
        sent = [
            compact(
                {
                    "role": m.role,
                    "content": m.content,
                    "metadata": await self._message_metadata(m.metadata),
                }
            )
            for m in messages
        ]
        body = await self._rest.call(
            "POST",
            f"/conversations/{segment(conversation_id)}/messages/bulk",
            body={"messages": sent},
        )
        returned = envelope(body, "messages")
        return [
            _message(raw, conversation_id, sent[i] if i < len(sent) else {})
            for i, raw in enumerate(returned)
        ]

    async def list_messages(
        self, conversation_id: str, limit: int = DEFAULT_LIST_LIMIT
    ) -> list[Message]:
        check_limit(limit)
        body = await self._rest.call(
            "GET",
            f"/conversations/{segment(conversation_id)}/messages",
            params={"limit": limit},
        )
        return [_message(raw, conversation_id) for raw in envelope(body, "messages")]

    async def search_messages(
        self,
        conversation_id: str,
        query: str,
        limit: int = DEFAULT_SEARCH_LIMIT,
        mode: SearchMode | None = None,
    ) -> SearchResult[Message]:
        """``mode`` only goes to a server that runs it (hosted NAMS rejects the field)."""
        check_query(query)
        check_limit(limit)
        mode = await self._search_mode(check_mode(mode))
        body = await self._rest.call(
            "POST",
            f"/conversations/{segment(conversation_id)}/search",
            body=compact({"query": query, "limit": limit, "mode": mode}),
        )
        items = [_message(raw, conversation_id) for raw in envelope(body, "messages")]
        return SearchResult[Message](items=items, search_type=search_type(body))

    # -- context, observations, reflections, extraction status ------------------------
    async def get_context(self, conversation_id: str) -> Context:
        body = await self._rest.call("GET", f"/conversations/{segment(conversation_id)}/context")
        cid = conversation_id
        return Context(
            reflections=[
                lenient(Reflection, r, conversation_id=cid) for r in envelope(body, "reflections")
            ],
            observations=[
                lenient(Observation, o, conversation_id=cid) for o in envelope(body, "observations")
            ],
            recent_messages=[_message(m, cid) for m in envelope(body, "recent_messages")],
        )

    async def list_observations(
        self, conversation_id: str, limit: int = DEFAULT_LIST_LIMIT
    ) -> list[Observation]:
        check_limit(limit)
        body = await self._rest.call(
            "GET",
            f"/conversations/{segment(conversation_id)}/observations",
            params={"limit": limit},
        )
        return [
            lenient(Observation, raw, conversation_id=conversation_id)
            for raw in envelope(body, "observations")
        ]

    async def list_reflections(self, conversation_id: str) -> list[Reflection]:
        body = await self._rest.call(
            "GET", f"/conversations/{segment(conversation_id)}/reflections"
        )
        return [
            lenient(Reflection, raw, conversation_id=conversation_id)
            for raw in envelope(body, "reflections")
        ]

    async def get_extraction_status(self, conversation_id: str) -> ExtractionStatus:
        body = await self._rest.call(
            "GET", f"/conversations/{segment(conversation_id)}/extraction-status"
        )
        return read_extraction_status(body, conversation_id)


def _message(raw: object, conversation_id: str, sent: dict[str, Any] | None = None) -> Message:
    """A message from an answer; what was sent fills what the answer leaves out (the
    hosted add answer is only ``{id, conversationId, role, content}``)."""
    return lenient(Message, raw, conversation_id=conversation_id, **(sent or {}))
