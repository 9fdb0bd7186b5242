"""The hosted client's HTTP layer: headers, JSON bodies, retries, typed errors.

``RestClient`` knows nothing about memory; it sends one request to a path under the
endpoint (``/v1`` included) and returns the decoded JSON, retrying per ``RetryPolicy`` and
raising the typed errors of ``nams_local.errors``. Wire conventions follow the TypeScript
SDK: ``Authorization: Bearer <key>``, ``X-Workspace-Id`` when a workspace is set,
``Content-Type: application/json`` only on requests that carry a body, and keys whose
value is ``None`` left out of bodies and query strings.

Any httpx transport can be plugged in (``httpx.ASGITransport`` runs the client against an
ASGI app in-process, with no socket).
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import httpx

from nams_local.__version__ import __version__
from nams_local.errors import BackendUnavailableError, InvalidInputError, NotFoundError

from .errors import error_for_response, request_id
from .retry import RetryPolicy, never_sent, parse_retry_after

__all__ = ["RestClient", "compact", "segment", "user_agent"]

JsonBody = Mapping[str, Any]
Params = Mapping[str, str | int | bool | None]


def user_agent() -> str:
    return f"nams-local/{__version__} (+python httpx)"


def compact(fields: Mapping[str, Any]) -> dict[str, Any]:
    """``fields`` without the keys whose value is ``None`` (one level: nested data is kept)."""
    return {key: value for key, value in fields.items() if value is not None}


def segment(value: str) -> str:
    """One path segment: percent-encoded, so an id can never reach another route."""
    if not isinstance(value, str) or not value.strip():
        raise NotFoundError(f"no object has the id {value!r}")
    return quote(value, safe="")


def _query(params: Params | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in (params or {}).items():
        if value is None:
            continue
        out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


class RestClient:
    """One ``httpx.AsyncClient`` plus the retry loop and the error mapping."""

    def __init__(
        self,
        api_key: str,
        *,
        endpoint: str,
        workspace_id: str | None,
        timeout: float,
        policy: RetryPolicy,
        transport: httpx.AsyncBaseTransport | None = None,
        rng: random.Random | None = None,
    ) -> None:
        headers = {
            "Authorization": f"Bearer {api_key}",
            "User-Agent": user_agent(),
            "Accept": "application/json",
        }
        if workspace_id:
            headers["X-Workspace-Id"] = workspace_id
        self.endpoint = endpoint.rstrip("/")
        self.policy = policy
        self.timeout = timeout
        self._rng = rng or random.Random()
        self._http = httpx.AsyncClient(
            base_url=self.endpoint,
            headers=headers,
            timeout=timeout,
            transport=transport,
            follow_redirects=False,
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def call(
        self,
        method: str,
        path: str,
        *,
        params: Params | None = None,
        body: JsonBody | None = None,
    ) -> Any:
        """Send, raise the typed error for a non-2xx answer, return the JSON (None if empty)."""
        response = await self.send(method, path, params=params, body=body)
        if not response.is_success:
            raise error_for_response(response)
        if not response.content or response.status_code == 204:
            return None
        try:
            return json.loads(response.content)
        except ValueError:
            raise BackendUnavailableError(
                f"{method} {path} answered {response.status_code} with a body that is not JSON",
                request_id=request_id(response),
            ) from None

    async def send(
        self,
        method: str,
        path: str,
        *,
        params: Params | None = None,
        body: JsonBody | None = None,
    ) -> httpx.Response:
        """The final response after retries (any status); network failures raise
        ``BackendUnavailableError`` once retrying is no longer allowed or worthwhile."""
        method = method.upper()
        content: bytes | None = None
        headers: dict[str, str] = {}
        if body is not None:
            try:
                content = json.dumps(body, separators=(",", ":"), allow_nan=False).encode()
            except (TypeError, ValueError) as exc:
                raise InvalidInputError(f"the request body is not valid JSON: {exc}") from None
            headers["Content-Type"] = "application/json"
        policy = self.policy
        started = time.monotonic()
        deadline = started + policy.budget
        retries = 0
        #: A DELETE whose earlier attempt may have been applied: a 404 now means "done".
        maybe_applied = False
        timeout = self.timeout
        while True:
            try:
                response = await self._http.request(
                    method,
                    path,
                    params=_query(params),
                    content=content,
                    headers=headers,
                    timeout=timeout,
                )
            except httpx.TransportError as exc:
                delay = self._next_delay(retries, deadline, None)
                if delay is None or not policy.retry_on_error(method, exc):
                    raise BackendUnavailableError(
                        f"{method} {self.endpoint}{path} failed: {_describe(exc)}"
                    ) from exc
                maybe_applied = maybe_applied or not never_sent(exc)
            else:
                status = response.status_code
                if method == "DELETE" and status == 404 and maybe_applied:
                    return httpx.Response(204, request=response.request)
                if not policy.retry_on_status(method, status):
                    return response
                retry_after = parse_retry_after(response.headers.get("Retry-After"))
                delay = self._next_delay(retries, deadline, retry_after)
                if delay is None:
                    return response
                await response.aclose()
                maybe_applied = maybe_applied or status in (502, 504)
            retries += 1
            await asyncio.sleep(delay)
            remaining = deadline - time.monotonic()
            timeout = max(0.001, min(self.timeout, remaining))

    def _next_delay(self, retries: int, deadline: float, retry_after: float | None) -> float | None:
        """The wait before the next attempt, or None when no attempt may follow."""
        if retries >= self.policy.max_retries:
            return None
        delay = self.policy.backoff(retries + 1, self._rng)
        if retry_after is not None:
            delay = retry_after
        if time.monotonic() + delay >= deadline:
            return None
        return delay


def _describe(exc: httpx.TransportError) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
