"""The server's routes read request bodies through ``parse_strict_json`` and answer with
bytes encoded once.

Why the parser refuses what it refuses is in ``nams_local.strict_json``; this module only
plugs it into FastAPI, so every ``/v1`` route answers a malformed body with a 400 before
its handler runs. On the way out, a route's plain return value (a ``dict`` or ``list``)
becomes a ready ``Response`` (``large_json.encode_answer``), so FastAPI's serialization step
(``jsonable_encoder`` over the whole answer) is skipped with the same bytes on the wire.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute

from nams_local.strict_json import parse_strict_json

from .large_json import encode_answer, parse_body

__all__ = ["StrictJSONRequest", "StrictJSONRoute", "answer_response", "parse_strict_json"]


class StrictJSONRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = await parse_body(await self.body())
        return self._json


def _encoded(
    endpoint: Callable[..., Coroutine[Any, Any, Any]], status_code: int | None
) -> Callable[..., Coroutine[Any, Any, Any]]:
    """``endpoint``, answering a plain ``dict``/``list`` as a ready JSON ``Response``.

    ``functools.wraps`` keeps what FastAPI reads from the endpoint (its signature through
    ``__wrapped__``, its globals for the string annotations, name and docstring for the
    OpenAPI document). No ``/v1`` route sets headers or a status through an injected
    ``Response``, which this would drop; ready ``Response`` results pass through."""

    @functools.wraps(endpoint)
    async def answer(*args: Any, **kwargs: Any) -> Any:
        return answer_response(await endpoint(*args, **kwargs), status_code or 200)

    return answer


def answer_response(result: Any, status_code: int) -> Any:
    """A route's plain ``dict``/``list`` answer as the ready JSON ``Response`` FastAPI would
    send (``encode_answer``); anything else (a ready ``Response``) as it is."""
    if isinstance(result, dict | list):
        return Response(
            encode_answer(result), status_code=status_code, media_type="application/json"
        )
    return result


class StrictJSONRoute(APIRoute):
    """An ``APIRoute`` whose handler reads bodies through ``StrictJSONRequest`` and whose
    endpoint's plain answers are encoded once (``_encoded``)."""

    def __init__(
        self, path: str, endpoint: Callable[..., Coroutine[Any, Any, Any]], **kwargs: Any
    ) -> None:
        if inspect.iscoroutinefunction(endpoint):
            endpoint = _encoded(endpoint, kwargs.get("status_code"))
        super().__init__(path, endpoint, **kwargs)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict_handler(request: Request) -> Response:
            return await handler(StrictJSONRequest(request.scope, request.receive))

        return strict_handler
