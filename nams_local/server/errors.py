"""Every failure leaves the server as the hosted ``{"error": "..."}`` body.

Hosted clients parse that one shape (``handlers.ErrorResponse``) and switch on the status,
so the server never lets FastAPI's own ``{"detail": ...}`` bodies or a plain-text 500 out.
``NamsError`` subclasses carry their status (404, 400, 501, 401, 503, 410), request
validation failures of any kind become 400, and anything unexpected becomes a 500 whose
body says no more than ``internal error`` (the details go to the log).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
from starlette.types import Scope

from nams_local.errors import NamsError

__all__ = [
    "describe_validation_errors",
    "error_response",
    "install_error_handlers",
    "nams_error_response",
]


def error_response(
    status: int, message: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=dict(headers or {}))


def _location(loc: Sequence[Any]) -> str:
    parts = [str(part) for part in loc]
    if parts and parts[0] in ("body", "query", "path", "header"):
        where, rest = parts[0], parts[1:]
        return ".".join(rest) if rest else where
    return ".".join(parts)


def describe_validation_errors(errors: Sequence[Any]) -> str:
    """One line a human can act on, from pydantic's error list (at most three shown)."""
    if not errors:
        return "invalid request"
    first = errors[0]
    if first.get("type") == "json_invalid":
        reason = (first.get("ctx") or {}).get("error") or "JSON decode error"
        return f"malformed JSON body: {reason}"
    loc = list(first.get("loc") or ())
    if first.get("type") == "missing" and loc == ["body"]:
        return "request body is required (a JSON object)"
    shown = []
    for error in errors[:3]:
        where = _location(error.get("loc") or ())
        shown.append(f"{where}: {error.get('msg', 'invalid')}")
    more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
    return "invalid request: " + "; ".join(shown) + more


def nams_error_response(exc: NamsError) -> JSONResponse:
    """The answer to an engine error: its status and message, ``Retry-After`` when it
    has one, ``WWW-Authenticate`` on a 401."""
    headers = {"WWW-Authenticate": "Bearer"} if exc.status_code == 401 else {}
    if exc.retry_after is not None:
        headers["Retry-After"] = str(max(1, round(exc.retry_after)))
    return error_response(exc.status_code, exc.message, headers)


async def _nams_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, NamsError)
    return nams_error_response(exc)


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    return error_response(400, describe_validation_errors(exc.errors()))


#: The methods an ``Allow`` header may name (the API serves no others).
_METHODS = ("DELETE", "GET", "PATCH", "POST", "PUT")


def allowed_methods(app: FastAPI, scope: Scope) -> list[str]:
    """Every method some route serves at the request's path, asked of the routes
    themselves (``BaseRoute.matches``, convertors included), so ``/v1/entities/graph``
    lists only what the graph route serves, never what ``/v1/entities/{id}`` does."""
    return [
        method
        for method in _METHODS
        if any(
            route.matches({**scope, "method": method})[0] is Match.FULL
            for route in app.router.routes
        )
    ]


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    phrase = HTTPStatus(exc.status_code).phrase
    detail = exc.detail if isinstance(exc.detail, str) and exc.detail else phrase
    # Starlette's stock details ("Not Found") read as hosted messages do: lower case.
    message = detail.lower() if detail == phrase else detail
    headers = dict(exc.headers or {})
    if exc.status_code == 405 and isinstance(request.app, FastAPI):
        headers["Allow"] = ", ".join(allowed_methods(request.app, request.scope))
    return error_response(exc.status_code, message, headers)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(NamsError, _nams_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    # Anything else: ``middleware.RequestGate``'s guard (a handler for ``Exception``
    # here would run in Starlette's ServerErrorMiddleware, which re-raises to the server).
