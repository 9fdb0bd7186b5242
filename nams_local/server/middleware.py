"""The three things every request passes through before a route: log, auth, size limit.

They are plain ASGI middleware (no ``BaseHTTPMiddleware``) so they see the raw request
before FastAPI reads a byte of the body. The order, outermost first, is deliberate:

1. ``AccessLogMiddleware`` — one line per request, whatever happened inside;
2. ``AuthMiddleware`` — a ``/v1`` request without a valid token is answered 401 before
   routing or body parsing, so the status never depends on what the caller sent;
3. ``BodyLimitMiddleware`` — the body is buffered up to the limit, then handed on, so an
   oversized body is refused with 413 and never parsed.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nams_local.errors import NamsError

from .auth import Authenticator, Principal
from .errors import error_response

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "PRINCIPAL_KEY",
    "AccessLogMiddleware",
    "AuthMiddleware",
    "BodyLimitMiddleware",
    "request_principal",
]

logger = logging.getLogger("nams_local.server")

#: 1 MiB: a bulk add of 100 long messages fits with room to spare.
DEFAULT_MAX_BODY_BYTES = 1024 * 1024
#: Refused bodies are read and dropped up to this size before the 413 goes out: a client
#: that is still sending when the server closes the connection sees a reset, not the 413.
DRAIN_LIMIT = 64 * 1024 * 1024
#: Where the authenticated ``Principal`` lives in ``scope["state"]``.
PRINCIPAL_KEY = "nams_principal"
_API_PREFIX = "/v1"


def _state(scope: Scope) -> dict[str, Any]:
    state: dict[str, Any] = scope.setdefault("state", {})
    return state


def request_principal(scope: Scope) -> Principal | None:
    principal = _state(scope).get(PRINCIPAL_KEY)
    return principal if isinstance(principal, Principal) else None


def _is_api(path: str) -> bool:
    return path == _API_PREFIX or path.startswith(_API_PREFIX + "/")


class AccessLogMiddleware:
    """Logs ``method path status duration_ms workspace`` on ``nams_local.server``.

    The workspace is a hash (``Principal.workspace_hash``), never the token or the name.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        _state(scope)  # create the dict inner layers write the principal into
        started = time.perf_counter()
        status = 500

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            duration_ms = (time.perf_counter() - started) * 1000
            principal = request_principal(scope)
            workspace = principal.workspace_hash if principal else "-"
            method, path = scope.get("method", "-"), scope.get("path", "-")
            logger.info(
                "%s %s %d %.1fms workspace=%s",
                method,
                path,
                status,
                duration_ms,
                workspace,
                extra={
                    "http_method": method,
                    "http_path": path,
                    "http_status": status,
                    "duration_ms": round(duration_ms, 3),
                    "workspace_hash": workspace,
                },
            )


class AuthMiddleware:
    """Authenticates every ``/v1`` request and stores the ``Principal`` in the scope."""

    def __init__(self, app: ASGIApp, authenticator: Authenticator) -> None:
        self.app = app
        self.authenticator = authenticator

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _is_api(scope["path"]):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        try:
            principal = await self.authenticator.authenticate(
                headers.get("authorization"), headers.get("x-workspace-id")
            )
        except NamsError as exc:
            extra = {"WWW-Authenticate": "Bearer"} if exc.status_code == 401 else None
            await error_response(exc.status_code, exc.message, extra)(scope, receive, send)
            return
        _state(scope)[PRINCIPAL_KEY] = principal
        await self.app(scope, receive, send)


class BodyLimitMiddleware:
    """Refuses bodies over ``max_bytes`` with 413, by declared length or by counting."""

    def __init__(self, app: ASGIApp, max_bytes: int = DEFAULT_MAX_BODY_BYTES) -> None:
        if max_bytes < 1:
            raise ValueError("max_bytes must be at least 1")
        self.app = app
        self.max_bytes = max_bytes

    async def _refuse(
        self, scope: Scope, receive: Receive, send: Send, *, more_body: bool = True
    ) -> None:
        drained = 0
        while more_body and drained <= DRAIN_LIMIT:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away: nobody to answer
            drained += len(message.get("body", b""))
            more_body = message.get("more_body", False)
        error = f"request body too large: the limit is {self.max_bytes} bytes"
        await error_response(413, error, {"Connection": "close"})(scope, receive, send)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                more = message.get("more_body", False)
                await self._refuse(scope, receive, send, more_body=more)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
