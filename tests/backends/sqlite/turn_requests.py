"""The turn request the SQLite turn tests send: every source of a first-round retrieval."""

from __future__ import annotations

from nams_local.turns import TurnRequest

__all__ = ["USER", "full_request"]

USER = "alex"


def full_request(conversation_id: str, query: str) -> TurnRequest:
    """All five sources, the user's own entity included, for ``USER``."""
    return TurnRequest(
        conversation_id=conversation_id,
        user_id=USER,
        query=query,
        message_limit=6,
        entity_limit=5,
        conversation_limit=3,
        per_conversation_limit=3,
        user_entity=True,
    )
