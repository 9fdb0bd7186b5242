"""Recording what the hosted client sends and what the server answers, to check it against
the hosted spec.

``RecordingTransport`` wraps any httpx transport (``ASGITransport`` or a real network
one) and appends every exchange to a ``TrafficLog``. The contract harnesses of the hosted
client record into ``SESSION_LOG``; ``tests/wire/test_hosted_traffic.py`` then checks that
each request body fits the spec's request schema and each answer on a spec route fits its
response schema. Extension routes (``EXTENSION_ROUTES``) are not in the spec and exempt.
When ``$NAMS_WIRE_TRAFFIC_FILE`` is set, exchanges are also appended there as JSON lines
(how a separate pytest process hands its traffic back).
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from .openapi_spec import OpenApiSpec

__all__ = [
    "EXTENSION_ROUTES",
    "SESSION_GROUP",
    "SESSION_LOG",
    "TRAFFIC_FILE_ENV",
    "Exchange",
    "RecordingTransport",
    "TrafficLog",
    "is_extension",
    "violations",
]

TRAFFIC_FILE_ENV = "NAMS_WIRE_TRAFFIC_FILE"

#: Routes only nams-local serves (method, path template under the endpoint).
EXTENSION_ROUTES: tuple[tuple[str, str], ...] = (
    ("GET", "/v1/capabilities"),
    ("POST", "/v1/relationships"),
    ("DELETE", "/v1/relationships/{id}"),
    ("GET", "/v1/entities/by-name"),
    ("GET", "/v1/entities/{id}/neighbourhood"),
    ("POST", "/v1/users/{userId}/messages/search"),
    ("DELETE", "/v1/conversations/{id}/messages/{messageId}"),
    ("POST", "/v1/graph/expand"),
)


@dataclass(frozen=True)
class Exchange:
    method: str
    #: Path and query string, e.g. ``/v1/conversations?limit=50``.
    url: str
    request_body: Any
    status: int
    response_body: Any
    #: The test that caused it (``PYTEST_CURRENT_TEST``), for failure messages.
    test: str


class TrafficLog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._exchanges: list[Exchange] = []

    def add(self, exchange: Exchange) -> None:
        with self._lock:
            self._exchanges.append(exchange)
        path = os.environ.get(TRAFFIC_FILE_ENV)
        if path:
            with self._lock, Path(path).open("a", encoding="utf-8") as out:
                out.write(json.dumps(asdict(exchange)) + "\n")

    def extend_from_file(self, path: Path) -> None:
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                self._exchanges.append(Exchange(**json.loads(line)))

    @property
    def exchanges(self) -> list[Exchange]:
        with self._lock:
            return list(self._exchanges)


#: Filled by the hosted contract harnesses.
SESSION_LOG = TrafficLog()

#: Under ``pytest -n`` each worker has its own ``SESSION_LOG``: the hosted contract tests
#: and the test that checks their traffic carry this ``xdist_group`` mark, so that
#: ``--dist loadgroup`` (set in ``addopts``) runs them all on one worker, in collection
#: order (the contract suite first).
SESSION_GROUP = pytest.mark.xdist_group("hosted-contract-traffic")


def _json(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return {"<not json>": raw[:200].decode("utf-8", "replace")}


class RecordingTransport(httpx.AsyncBaseTransport):
    """Passes every request to ``inner`` and logs it with its answer, unchanged."""

    def __init__(self, inner: httpx.AsyncBaseTransport, log: TrafficLog = SESSION_LOG) -> None:
        self.inner = inner
        self.log = log

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        sent = await request.aread()
        response = await self.inner.handle_async_request(request)
        raw = b"".join([chunk async for chunk in response.aiter_raw()])
        await response.aclose()
        encoded = "content-encoding" in response.headers
        target = request.url.raw_path.decode("ascii")
        self.log.add(
            Exchange(
                method=request.method,
                url=target,
                request_body=_json(sent),
                status=response.status_code,
                response_body={"<encoded>": True} if encoded else _json(raw),
                test=os.environ.get("PYTEST_CURRENT_TEST", ""),
            )
        )
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=httpx.ByteStream(raw),
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


def _extension_paths() -> dict[str, dict[str, Any]]:
    paths: dict[str, dict[str, Any]] = {}
    for method, template in EXTENSION_ROUTES:
        paths.setdefault(template, {})[method.lower()] = {}
    return paths


#: The extension routes as a tiny spec, so they are matched exactly like spec routes.
_EXTENSIONS = OpenApiSpec({"swagger": "2.0", "paths": _extension_paths()})


def is_extension(method: str, url: str) -> bool:
    """Checked before the spec: ``/v1/entities/by-name`` would match ``/v1/entities/{id}``."""
    return _EXTENSIONS.match(method, url) is not None


def violations(spec: OpenApiSpec, exchanges: list[Exchange]) -> list[str]:
    """Every way the exchanges break the spec, one line each (empty when all conform)."""
    found: list[str] = []
    for ex in exchanges:
        if is_extension(ex.method, ex.url):
            continue
        if spec.match(ex.method, ex.url) is None:
            found.append(f"{ex.method} {ex.url}: neither a spec route nor an extension")
            continue
        where = f"{ex.method} {ex.url} -> {ex.status} (in {ex.test or '?'})"
        for error in spec.request_errors(ex.method, ex.url, ex.request_body):
            found.append(f"{where}: request {error}")
        for error in spec.response_errors(ex.method, ex.url, ex.status, ex.response_body):
            found.append(f"{where}: response {error}")
    return found
