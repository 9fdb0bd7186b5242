"""``/v1``'s guard against unexpected exceptions: a logged ``500 {"error": "internal
error"}`` (the hosted body) on a connection that stays usable (``CatchUnexpected`` says
why a guard of our own is needed). ``/ui`` has its own, answering HTML."""

from __future__ import annotations

import logging

from starlette.types import ASGIApp, Scope

from nams_local.asgi_unexpected import CatchUnexpected

from .errors import error_response

__all__ = ["UnexpectedErrorMiddleware"]

logger = logging.getLogger("nams_local.server")


def _internal_error(scope: Scope) -> ASGIApp:
    return error_response(500, "internal error")


class UnexpectedErrorMiddleware(CatchUnexpected):
    """The server's outermost guard but for the access log."""

    def __init__(self, app: ASGIApp) -> None:
        super().__init__(app, answer=_internal_error, logger=logger)
