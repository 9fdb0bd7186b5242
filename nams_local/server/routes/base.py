"""The router every ``/v1`` module builds on: prefix, strict JSON, documented auth."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from ..deps import documented_auth
from ..strict_json import StrictJSONRoute

__all__ = ["EXTENSION", "api_router"]

#: ``openapi_extra`` of every route the hosted API lacks: hosted clients never need them.
EXTENSION: dict[str, Any] = {"x-nams-local-extension": True}


def api_router(*, tags: list[str]) -> APIRouter:
    return APIRouter(
        prefix="/v1",
        tags=list(tags),
        route_class=StrictJSONRoute,
        dependencies=[documented_auth],
    )
