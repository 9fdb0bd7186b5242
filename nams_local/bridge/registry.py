"""The bridge's method table: each method's name, request body and handler.

A handler is registered under its own function name, which is the TCK adapter method name
and the last segment of ``POST /bridge/{method}``. It returns plain JSON (a dict, a list or
``None`` for a ``null`` result) or ``NO_CONTENT`` for the protocol's 204 replies.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from .backend import BridgeBackend, LegacyApi

__all__ = ["METHODS", "NO_CONTENT", "Bridge", "Method", "NoContent", "Reply", "bridge_method"]


class NoContent:
    """The reply of the void methods: 204 with an empty body."""


NO_CONTENT = NoContent()

Reply = dict[str, Any] | list[dict[str, Any]] | None | NoContent

B = TypeVar("B", bound=BaseModel)
Handler = Callable[["Bridge", B], Awaitable[Reply]]


@dataclass(frozen=True, slots=True)
class Bridge:
    """What a handler works on: the bridge's own backend (its own store and workspace)."""

    backend: BridgeBackend

    @property
    def legacy(self) -> LegacyApi:
        return self.backend.legacy

    @property
    def workspace(self) -> str:
        return self.backend.workspace


@dataclass(frozen=True, slots=True)
class Method:
    name: str
    body: type[BaseModel]
    handler: Callable[[Bridge, Any], Awaitable[Reply]]


#: Every bridge method by name, filled as the handler modules are imported.
METHODS: dict[str, Method] = {}


def bridge_method(body: type[B]) -> Callable[[Handler[B]], Handler[B]]:
    """Register the decorated handler under its function name, with its body model."""

    def register(fn: Handler[B]) -> Handler[B]:
        METHODS[fn.__name__] = Method(fn.__name__, body, fn)
        return fn

    return register
