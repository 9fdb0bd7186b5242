"""``purge_user`` over the wire: the server's purge when it has one, else what the hosted
contract allows.

``nams-local serve`` advertises ``userPurge`` and purges in one call
(``POST /v1/users/{userId}/purge``: every trace, file compacted). Hosted NAMS has no such
route; all its contract lets a client delete by user is the user's conversations
(``GET /v1/conversations?user_id=`` then ``DELETE /v1/conversations/{id}``, which takes
their messages, observations, reflections and reasoning steps along). Everything else is
named in the report's ``not_deleted`` instead of being silently left behind: the entities
and relationships extraction made of the user's messages (the contract does not say which
user an entity came from) and the service's own storage (compaction and backups are the
service's policy, not something a client can ask for).
"""

from __future__ import annotations

from typing import Protocol, cast

from nams_local.backend import MAX_LIST_LIMIT
from nams_local.models import Conversation
from nams_local.purge_report import PurgeReport, check_user_id

from .base import HostedBase
from .rest import segment

__all__ = [
    "CONTRACT_LEFTOVERS",
    "MAX_PURGE_ROUNDS",
    "ConversationDeletes",
    "PurgeRoutes",
    "purge_over_contract",
]

#: What a purge through the hosted contract cannot delete, as the report states it.
CONTRACT_LEFTOVERS = (
    "entities and relationships extracted from the user's messages: the hosted API does "
    "not say which user an entity came from, so none was deleted (review GET /v1/entities "
    "and delete with DELETE /v1/entities/{id})",
    "the service's own storage: whether deleted text leaves its disks, indexes and backups "
    "is the hosted service's retention policy; no client call compacts it",
)

#: Listing rounds at most (each lists up to 200 conversations and deletes them): bounds a
#: server that keeps listing what it was told to delete.
MAX_PURGE_ROUNDS = 1000


class ConversationDeletes(Protocol):
    """The two contract routes a purge without ``userPurge`` uses (any ``MemoryBackend``)."""

    async def list_conversations(
        self, user_id: str | None = None, limit: int = ...
    ) -> list[Conversation]: ...

    async def delete_conversation(self, conversation_id: str) -> None: ...


async def purge_over_contract(backend: ConversationDeletes, user_id: str) -> PurgeReport:
    """Delete the user's conversations through the hosted routes and report the rest;
    the hosted client's purge toward a server without ``userPurge``."""
    user_id = check_user_id(user_id)
    deleted: set[str] = set()
    messages = 0
    not_deleted = list(CONTRACT_LEFTOVERS)
    for _ in range(MAX_PURGE_ROUNDS):
        listed = await backend.list_conversations(user_id, limit=MAX_LIST_LIMIT)
        fresh = [c for c in listed if c.id not in deleted]
        if not fresh:
            if listed:
                not_deleted.append(
                    f"{len(listed)} conversation(s) still listed after being deleted: "
                    + ", ".join(sorted(c.id for c in listed)[:10])
                )
            break
        for conversation in fresh:
            await backend.delete_conversation(conversation.id)
            deleted.add(conversation.id)
            messages += conversation.message_count or 0
    else:
        not_deleted.append(f"stopped after {MAX_PURGE_ROUNDS} rounds: conversations may remain")
    return PurgeReport(
        user_id=user_id,
        deleted={"conversations": len(deleted), "messages": messages},
        not_deleted=not_deleted,
    )


class PurgeRoutes(HostedBase):
    async def purge_user(self, user_id: str) -> PurgeReport:
        """The server's purge (capability ``user_purge``), else ``purge_over_contract``."""
        user_id = check_user_id(user_id)
        if not (await self.probe_capabilities()).user_purge:
            # The mixin is part of ``HostedBackend``, whose conversation routes it uses.
            return await purge_over_contract(cast(ConversationDeletes, self), user_id)
        body = await self._rest.call("POST", f"/users/{segment(user_id)}/purge")
        return PurgeReport.model_validate(body)
