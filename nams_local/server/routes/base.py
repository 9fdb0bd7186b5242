"""The router every ``/v1`` module builds on: prefix, strict JSON, documented auth."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel

from ..deps import current_caller
from ..strict_json import StrictJSONRoute

__all__ = ["EXTENSION", "answers", "api_router"]

#: ``openapi_extra`` of every route the hosted API lacks: hosted clients never need them.
EXTENSION: dict[str, Any] = {"x-nams-local-extension": True}


def answers(model: type[BaseModel], *errors: int, status: int = 200) -> dict[str, Any]:
    """Route options that type the success answer as ``model`` in the OpenAPI document and
    list the error statuses the route can give besides those every route has (400, 401;
    see ``openapi.py``). The handler still returns plain JSON (``response_model=None``): the
    model documents, schemathesis checks that the answers fit it."""
    responses: dict[int | str, dict[str, Any]] = {status: {"model": model}}
    for code in errors:
        responses[code] = {}
    return {"response_model": None, "responses": responses}


def api_router(*, tags: list[str]) -> APIRouter:
    return APIRouter(
        prefix="/v1",
        tags=list(tags),
        route_class=StrictJSONRoute,
        dependencies=[Depends(current_caller)],
    )
