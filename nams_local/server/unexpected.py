"""Unexpected exceptions end as a clean 500 on a connection that stays usable.

Starlette runs an ``Exception`` handler inside its outermost ``ServerErrorMiddleware``,
which sends the handler's response and then *re-raises* the exception "so that it can be
logged by the server". uvicorn then logs "Exception in ASGI application" and, since the
response had already started, closes the transport without ``Connection: close``, so a
keep-alive client's next request on that connection fails (issue 15, item 4). This
middleware catches the exception itself, logs it once, answers the hosted
``{"error": "internal error"}`` body and returns normally, so the server never sees it.
"""

from __future__ import annotations

import logging

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import error_response

__all__ = ["UnexpectedErrorMiddleware"]

logger = logging.getLogger("nams_local.server")


class UnexpectedErrorMiddleware:
    """Turns an exception below it into a logged 500 (re-raised only when the response had
    already started: then there is no clean answer left to give and uvicorn must close)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception:
            request = Request(scope)
            logger.exception("unhandled error on %s %s", request.method, request.url.path)
            if started:
                raise
            await error_response(500, "internal error")(scope, receive, send)
