"""What every request passes through before a route: log, 500 guard, auth, size limit.

One plain ASGI layer (``RequestGate``, no ``BaseHTTPMiddleware``) that sees the raw request
before FastAPI reads a byte of the body. They were four middlewares, each one more
coroutine and one more ``send`` wrapper per request on the event loop (issue 12's profile);
the order of the steps, outermost first, is unchanged and deliberate:

1. the access log — one line per request, whatever happened inside (no work at all when
   ``nams_local.server`` is not logging INFO);
2. the 500 guard (``asgi_unexpected.call_guarded``) — an unexpected exception below is a
   logged ``500 {"error": "internal error"}`` on a connection that stays usable;
3. auth — a ``/v1`` request without a valid token is answered 401 before routing or body
   parsing, so the status never depends on what the caller sent;
4. the body limit — the body is buffered up to the limit, then handed on, so an oversized
   body is refused with 413 and never parsed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from nams_local.asgi_unexpected import call_guarded
from nams_local.errors import NamsError

from .auth import Authenticator, Principal
from .errors import error_response
from .unexpected import internal_error

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "PRINCIPAL_KEY",
    "HotAnswer",
    "RequestGate",
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


#: ``(scope, body, caller, receive, send) -> answered?``: a shortcut past FastAPI.
HotAnswer = Callable[[Scope, bytes, Principal, Receive, Send], Awaitable[bool]]


def _state(scope: Scope) -> dict[str, Any]:
    state: dict[str, Any] = scope.setdefault("state", {})
    return state


def request_principal(scope: Scope) -> Principal | None:
    principal = _state(scope).get(PRINCIPAL_KEY)
    return principal if isinstance(principal, Principal) else None


def _is_api(path: str) -> bool:
    return path == _API_PREFIX or path.startswith(_API_PREFIX + "/")


class RequestGate:
    """The access log, the 500 guard, auth and the body limit, as one ASGI layer.

    The log line is ``method path status duration_ms workspace`` on ``nams_local.server``;
    the workspace is a hash (``Principal.workspace_hash``), never the token or the name.
    Bodies over ``max_bytes`` are refused with 413, by declared length or by counting.
    """

    def __init__(
        self,
        app: ASGIApp,
        authenticator: Authenticator,
        max_bytes: int = DEFAULT_MAX_BODY_BYTES,
        hot: HotAnswer | None = None,
    ) -> None:
        if max_bytes < 1:
            raise ValueError("max_bytes must be at least 1")
        self.app = app
        self.authenticator = authenticator
        self.max_bytes = max_bytes
        #: Answers the per-turn routes of the plain shape without FastAPI
        #: (``hot_routes.HotRoutes.answer``); ``False`` hands the request on.
        self.hot = hot

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = _state(scope)  # inner layers read the principal from it
        if not logger.isEnabledFor(logging.INFO):
            await call_guarded(
                self._checked, scope, receive, send, answer=internal_error, logger=logger
            )
            return
        started = time.perf_counter()
        status = 500

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await call_guarded(
                self._checked, scope, receive, send_status, answer=internal_error, logger=logger
            )
        finally:
            self._log(scope, state, status, (time.perf_counter() - started) * 1000)

    @staticmethod
    def _log(scope: Scope, state: dict[str, Any], status: int, duration_ms: float) -> None:
        principal = state.get(PRINCIPAL_KEY)
        workspace = principal.workspace_hash if isinstance(principal, Principal) else "-"
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

    async def _checked(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Auth (``/v1`` only), then the body limit, then the app."""
        headers = Headers(scope=scope)
        principal: Principal | None = None
        if _is_api(scope["path"]):
            try:
                principal = await self.authenticator.authenticate(
                    headers.get("authorization"), headers.get("x-workspace-id")
                )
            except NamsError as exc:
                extra = {"WWW-Authenticate": "Bearer"} if exc.status_code == 401 else None
                await error_response(exc.status_code, exc.message, extra)(scope, receive, send)
                return
            _state(scope)[PRINCIPAL_KEY] = principal
        declared = headers.get("content-length")
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
        if (
            principal is not None
            and self.hot is not None
            and await self.hot(scope, body, principal, receive, send)
        ):
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

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
