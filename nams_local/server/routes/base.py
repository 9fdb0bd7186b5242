"""The router every ``/v1`` module builds on: prefix, strict JSON, documented auth."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel
from starlette.convertors import Convertor, register_url_convertor

from nams_local.errors import InvalidInputError

from ..deps import documented_auth
from ..strict_json import StrictJSONRoute

__all__ = ["ENTITY_ID", "EXTENSION", "MESSAGE_ID", "answers", "api_router"]

#: The literal segments under ``/v1/entities/`` that are routes of their own, never ids.
ENTITY_ROUTE_WORDS = ("graph", "search", "by-name")


class EntityIdConvertor(Convertor[str]):
    """An entity id in a path: any segment but the route words, so ``/v1/entities/graph``
    is never matched by ``/v1/entities/{id}`` whatever the method (``PUT`` on it is a
    ``405`` naming ``GET``, not an update of entity "graph")."""

    regex = r"(?!(?:" + "|".join(ENTITY_ROUTE_WORDS) + r")(?:/|$))[^/]+"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("entity_id", EntityIdConvertor())


class MessageIdConvertor(Convertor[str]):
    """A message id in a path: any segment but ``bulk``, so ``DELETE`` (or ``OPTIONS``) of
    ``/v1/conversations/{id}/messages/bulk`` stays a ``405`` naming ``POST`` (E7) rather
    than a delete of message "bulk"."""

    regex = r"(?!bulk(?:/|$))[^/]+"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("message_id", MessageIdConvertor())
#: Spelling of a message id in a route path: ``f"/messages/{MESSAGE_ID}"``.
MESSAGE_ID = "{messageId:message_id}"
#: Spelling of an entity id in a route path: ``f"/entities/{ENTITY_ID}"``.
ENTITY_ID = "{id:entity_id}"


async def _single_valued_query(request: Request) -> None:
    """Every query parameter of the API takes one value: ``?type=a&type=b`` is a 400, not
    a silent choice of one of them. (``async``: a plain ``def`` dependency costs a hop to a
    worker thread per request.)"""
    names = [name for name, _ in request.query_params.multi_items()]
    if len(names) != len(set(names)):
        repeated = sorted({name for name in names if names.count(name) > 1})
        raise InvalidInputError(f"query parameter given more than once: {', '.join(repeated)}")


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
        dependencies=[documented_auth, Depends(_single_valued_query)],
    )
