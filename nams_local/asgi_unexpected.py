"""Unexpected exceptions end as a clean 500 on a connection that stays usable.

Starlette runs an ``Exception`` handler inside its outermost ``ServerErrorMiddleware``,
which sends the handler's response and then *re-raises* the exception "so that it can be
logged by the server". uvicorn then logs "Exception in ASGI application" and, since the
response had already started, closes the transport without ``Connection: close``, so a
keep-alive client's next request on that connection fails (issue 15, item 4).
``CatchUnexpected`` catches the exception itself, logs it once, sends the answer its owner
chose and returns normally, so nothing above sees it. The ``/v1`` server answers the hosted
``{"error": "internal error"}`` body (``nams_local.server.unexpected``); the inspector, a
Starlette app of its own mounted at ``/ui`` (with its own ``ServerErrorMiddleware``, which
would answer plain text first), answers an HTML page (``nams_local.inspector.app``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["CatchUnexpected", "call_guarded"]


async def call_guarded(
    app: ASGIApp,
    scope: Scope,
    receive: Receive,
    send: Send,
    *,
    answer: Callable[[Scope], ASGIApp],
    logger: logging.Logger,
) -> None:
    """``app`` on an HTTP request, an exception below it turned into a logged answer
    (re-raised only when the response had already started: then there is no clean answer
    left to give and the server must close). ``CatchUnexpected`` as a call, for an ASGI
    layer that does more than guard (the ``/v1`` server's ``RequestGate``)."""
    started = False

    async def tracked(message: Message) -> None:
        nonlocal started
        if message["type"] == "http.response.start":
            started = True
        await send(message)

    try:
        await app(scope, receive, tracked)
    except Exception:
        request = Request(scope)
        logger.exception("unhandled error on %s %s", request.method, request.url.path)
        if started:
            raise
        await answer(scope)(scope, receive, send)


class CatchUnexpected:
    """Turns an exception below it into a logged 500 built by ``answer(scope)`` (re-raised
    only when the response had already started: then there is no clean answer left to give
    and the server must close)."""

    def __init__(
        self, app: ASGIApp, *, answer: Callable[[Scope], ASGIApp], logger: logging.Logger
    ) -> None:
        self.app = app
        self.answer = answer
        self.logger = logger

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await call_guarded(self.app, scope, receive, send, answer=self.answer, logger=self.logger)
