"""The server's routes read request bodies through ``parse_strict_json``.

Why the parser refuses what it refuses is in ``nams_local.strict_json``; this module only
plugs it into FastAPI, so every ``/v1`` route answers a malformed body with a 400 before
its handler runs.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute

from nams_local.strict_json import parse_strict_json

from .large_json import parse_body

__all__ = ["StrictJSONRequest", "StrictJSONRoute", "parse_strict_json"]


class StrictJSONRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = await parse_body(await self.body())
        return self._json


class StrictJSONRoute(APIRoute):
    """An ``APIRoute`` whose handler reads bodies through ``StrictJSONRequest``."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict_handler(request: Request) -> Response:
            return await handler(StrictJSONRequest(request.scope, request.receive))

        return strict_handler
