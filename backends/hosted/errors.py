"""HTTP answers and network failures turned into the typed ``nams_local.errors``.

Callers of any backend catch the same classes, so a 404 from hosted NAMS and an unknown id in
the SQLite engine are both ``NotFoundError``. Each error carries the server's own ``error``
text (the hosted body is ``{"error": "..."}``) and the request id header when the server
sent one, which is what a support ticket needs.
"""

from __future__ import annotations

import json

import httpx

from nams_local.errors import (
    AuthenticationError,
    BackendUnavailableError,
    InvalidInputError,
    NamsError,
    NotFoundError,
    NotSupportedError,
)

from .retry import parse_retry_after

__all__ = ["REQUEST_ID_HEADERS", "error_class", "error_for_response", "error_text", "request_id"]

#: Headers that may carry the server's id for a request, most common first.
REQUEST_ID_HEADERS = (
    "X-Request-Id",
    "Request-Id",
    "X-Correlation-Id",
    "X-Amzn-RequestId",
    "X-Trace-Id",
)
_MAX_TEXT = 500

_BY_STATUS: dict[int, type[NamsError]] = {
    400: InvalidInputError,
    401: AuthenticationError,
    403: AuthenticationError,
    404: NotFoundError,
    405: NotSupportedError,
    409: InvalidInputError,
    410: NotFoundError,
    413: InvalidInputError,
    422: InvalidInputError,
    429: BackendUnavailableError,
    501: NotSupportedError,
}


def request_id(response: httpx.Response) -> str | None:
    for name in REQUEST_ID_HEADERS:
        value: str | None = response.headers.get(name)
        if value:
            return value
    return None


def error_text(response: httpx.Response) -> str:
    """The server's explanation: ``error`` (hosted), ``message`` or ``detail``, else the body."""
    raw = response.content
    try:
        body = json.loads(raw) if raw else None
    except ValueError:
        body = None
    if isinstance(body, dict):
        for key in ("error", "message", "detail"):
            value = body.get(key)
            if isinstance(value, str) and value.strip():
                return value
            if value is not None and not isinstance(value, str):
                return json.dumps(value)[:_MAX_TEXT]
    text = response.text.strip() if raw else ""
    return text[:_MAX_TEXT] if text else (response.reason_phrase or f"HTTP {response.status_code}")


def error_class(status: int) -> type[NamsError]:
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status >= 500:
        return BackendUnavailableError
    if 400 <= status < 500:
        return InvalidInputError
    return NamsError


def error_for_response(response: httpx.Response) -> NamsError:
    """The typed error for a non-2xx answer, with the server's text, request id and
    ``Retry-After`` (seconds), so a caller that may not repeat the request blindly (a POST
    answered 429) still learns how long the server asked it to wait."""
    cls = error_class(response.status_code)
    return cls(
        error_text(response),
        request_id=request_id(response),
        retry_after=parse_retry_after(response.headers.get("Retry-After")),
    )
