"""``/v1``'s answer to an unexpected exception: a logged ``500 {"error": "internal
error"}`` (the hosted body) on a connection that stays usable (``CatchUnexpected`` in
``nams_local.asgi_unexpected`` says why a guard of our own is needed; the server's
``middleware.RequestGate`` applies it). ``/ui`` has its own, answering HTML."""

from __future__ import annotations

from starlette.types import ASGIApp, Scope

from .errors import error_response

__all__ = ["internal_error"]


def internal_error(scope: Scope) -> ASGIApp:
    """The hosted 500 body; what went wrong is in the log, never in the answer."""
    return error_response(500, "internal error")
