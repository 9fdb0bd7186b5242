"""Who a memory belongs to: a user, and optionally one of their conversations."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import InvalidInputError

__all__ = ["Scope", "ScopeLike", "as_scope"]


@dataclass(frozen=True, slots=True)
class Scope:
    """``conversation_id=None`` lets the conversation ladder pick the user's latest one
    (or create one) — it continues the user's most recent conversation."""

    user_id: str
    conversation_id: str | None = None


ScopeLike = Scope | Mapping[str, Any]


def as_scope(scope: ScopeLike) -> Scope:
    """Accept a ``Scope`` or a dict (``user_id``/``userId``, ``conversation_id``/...)."""
    if isinstance(scope, Scope):
        return scope
    user_id = scope.get("user_id", scope.get("userId"))
    conversation_id = scope.get("conversation_id", scope.get("conversationId"))
    if not isinstance(user_id, str) or not user_id.strip():
        raise InvalidInputError("scope needs a non-empty user_id")
    if conversation_id is not None and not isinstance(conversation_id, str):
        raise InvalidInputError("scope conversation_id must be a string")
    return Scope(user_id=user_id, conversation_id=conversation_id or None)
