"""The ``/v1`` routes, one module per area of the hosted spec, plus the extensions."""

from __future__ import annotations

from fastapi import APIRouter

from .api_keys import router as api_keys_router
from .conversations import router as conversations_router
from .entities import router as entities_router
from .extensions import router as extensions_router
from .health import router as health_router
from .purge import router as purge_router
from .query import router as query_router
from .reasoning import router as reasoning_router

__all__ = ["ROUTERS"]

#: In registration order, which is the order a request's path is matched in (one route
#: after another): ``conversations`` first, since nearly every request of an agent's
#: traffic is one of its routes (no path of another router overlaps them), and the
#: extensions before ``entities`` so that ``/v1/entities/by-name`` is matched before
#: ``/v1/entities/{id}``.
ROUTERS: tuple[APIRouter, ...] = (
    health_router,
    conversations_router,
    extensions_router,
    entities_router,
    reasoning_router,
    query_router,
    api_keys_router,
    purge_router,
)
