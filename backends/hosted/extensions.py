"""Extension routes: served by ``nams-local serve``, absent from hosted NAMS.

Each method first makes sure the capability is on (probing ``GET /capabilities`` once if
that has not happened yet) and raises ``NotSupportedError`` without any further request
when it is off, as the TypeScript SDK does for ``getEntityByName`` / ``addRelationship``.
"""

from __future__ import annotations

from typing import Any

from nams_local.errors import InvalidInputError, NotFoundError
from nams_local.models import ConversationSearchHits, Entity, EntityGraph, Relationship
from nams_local.validation import (
    check_date,
    check_id,
    check_limit,
    check_query,
    check_required,
)

from .base import HostedBase
from .parse import envelope, lenient
from .rest import compact, segment
from .shapes import read_graph

__all__ = ["MAX_NEIGHBOURHOOD_DEPTH", "ExtensionRoutes"]

MAX_NEIGHBOURHOOD_DEPTH = 5


class ExtensionRoutes(HostedBase):
    async def delete_message(self, conversation_id: str, message_id: str) -> None:
        """``SupportsMessageDelete`` when the server advertises ``messageDelete``
        (``nams-local serve``); hosted NAMS has no such route: ``NotSupportedError``. A 404
        is not swallowed as other deletes' is: it means the conversation is unknown or the
        message is another conversation's (M1), a bug the caller must hear of."""
        check_id(conversation_id, "conversation id")
        check_id(message_id, "message id")
        await self._require("message_delete", "delete_message")
        await self._rest.call(
            "DELETE", f"/conversations/{segment(conversation_id)}/messages/{segment(message_id)}"
        )

    async def add_relationship(
        self,
        source_id: str,
        target_id: str,
        type: str,
        properties: dict[str, Any] | None = None,
        confidence: float | None = None,
        *,
        valid_from: str | None = None,
        valid_until: str | None = None,
        supersede: bool = True,
    ) -> Relationship:
        await self._require("relationship_writes", "add_relationship")
        type = check_required(type, "type")
        if confidence is not None and not 0.0 <= confidence <= 1.0:
            raise InvalidInputError("confidence must be from 0 to 1")
        valid_from = check_date(valid_from, "valid_from")
        valid_until = check_date(valid_until, "valid_until")
        asked = valid_from is not None or valid_until is not None or not supersede
        validity: dict[str, Any] = {}
        if await self._validity(asked):
            validity = {"validFrom": valid_from, "validUntil": valid_until}
            if not supersede:
                validity["supersede"] = False
        sent = compact(
            {
                "source_id": source_id,
                "target_id": target_id,
                "type": type,
                "properties": properties,
                "confidence": confidence,
            }
        )
        body = await self._rest.call(
            "POST",
            "/relationships",
            body=compact(
                {
                    "sourceId": source_id,
                    "targetId": target_id,
                    "type": type,
                    "properties": properties,
                    "confidence": confidence,
                    **validity,
                }
            ),
        )
        return lenient(Relationship, body, **sent)

    async def invalidate_relationship(
        self, relationship_id: str, valid_until: str | None = None
    ) -> Relationship:
        await self._require("relationship_validity", "invalidate_relationship")
        valid_until = check_date(valid_until, "valid_until")
        body = await self._rest.call(
            "POST",
            f"/relationships/{segment(relationship_id)}/invalidate",
            body=compact({"validUntil": valid_until}),
        )
        return lenient(Relationship, body)

    async def delete_relationship(self, relationship_id: str) -> None:
        await self._require("relationship_writes", "delete_relationship")
        await self._delete(f"/relationships/{segment(relationship_id)}")

    async def get_entity_by_name(self, name: str, type: str | None = None) -> Entity | None:
        await self._require("entity_by_name", "get_entity_by_name")
        check_required(name, "name")
        try:
            body = await self._rest.call(
                "GET", "/entities/by-name", params={"name": name, "type": type}
            )
        except NotFoundError:
            return None
        return lenient(Entity, body)

    async def search_user_messages(
        self,
        user_id: str,
        query: str,
        *,
        conversation_limit: int = 5,
        per_conversation_limit: int = 4,
        exclude_conversation_id: str | None = None,
        include_steps: bool = True,
    ) -> list[ConversationSearchHits]:
        await self._require("user_message_search", "search_user_messages")
        check_required(user_id, "user_id")
        check_query(query)
        check_limit(conversation_limit, name="conversation_limit")
        check_limit(per_conversation_limit, name="per_conversation_limit")
        body = await self._rest.call(
            "POST",
            f"/users/{segment(user_id)}/messages/search",
            body=compact(
                {
                    "query": query,
                    "conversationLimit": conversation_limit,
                    "perConversationLimit": per_conversation_limit,
                    "excludeConversationId": exclude_conversation_id,
                    "includeSteps": include_steps,
                }
            ),
        )
        return [
            lenient(ConversationSearchHits, raw, search_type="text")
            for raw in envelope(body, "conversations")
        ]

    async def entity_neighbourhood(
        self, entity_id: str, depth: int = 1, as_of: str | None = None
    ) -> EntityGraph:
        await self._require("graph_neighbourhood", "entity_neighbourhood")
        check_limit(depth, name="depth", maximum=MAX_NEIGHBOURHOOD_DEPTH)
        as_of = check_date(as_of, "as_of")
        params: dict[str, Any] = {"depth": depth}
        if as_of is not None and await self._validity(True):
            params["asOf"] = as_of
        body = await self._rest.call(
            "GET", f"/entities/{segment(entity_id)}/neighbourhood", params=params
        )
        return read_graph(body)
