"""The published OpenAPI document says what the server really answers.

FastAPI documents a ``422`` with its own ``{"detail": [...]}`` body on every route that
takes parameters. This server answers validation failures with ``400 {"error": ...}``
like hosted NAMS, so the generated document is corrected once, on first request: ``422``
goes, and every ``/v1`` operation lists each error status it can answer (``_statuses``:
``400`` and ``401`` everywhere, ``404`` where an id is named, ``413`` with a body, ``429``
and ``503`` where the store's lanes are used, plus what the route declares itself, such as
``410`` or ``501``), each with the hosted ``ErrorResponse`` schema.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

__all__ = ["install_openapi"]

_ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"error": {"type": "string"}},
    "required": ["error"],
    "example": {"error": "internal error"},
}
_ERROR_REF = {"$ref": "#/components/schemas/ErrorResponse"}


_RETRY_AFTER = {"Retry-After": {"description": "seconds to wait", "schema": {"type": "integer"}}}

#: Operations without an id in the path that still name a stored thing (in the body or
#: the query) and answer 404 when it is unknown.
_NAMES_AN_ID = {
    ("post", "/v1/reasoning/steps"),
    ("get", "/v1/reasoning/steps"),
    ("post", "/v1/reasoning/tool-calls"),
    ("post", "/v1/relationships"),
    ("post", "/v1/graph/expand"),
    ("get", "/v1/entities/by-name"),
}
#: Operations that never touch the store (so no 429/503 from its lanes).
_NO_STORE = {("get", "/v1/capabilities")}


def _error(description: str, *, retry: bool = False) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "description": description,
        "content": {"application/json": {"schema": _ERROR_REF}},
    }
    if retry:
        answer["headers"] = _RETRY_AFTER
    return answer


#: Descriptions of the error statuses (every one answers the hosted ``ErrorResponse``).
_ERRORS = {
    "400": "Invalid request: malformed JSON, wrong types, a value out of range, a query "
    "parameter given twice, a Cypher query past a limit",
    "401": "Missing or refused API key",
    "404": "Unknown id (in this workspace)",
    "405": "Method not allowed",
    "410": "The API key is revoked",
    "413": "Request body over the size limit (1 MiB by default)",
    "429": "Too many requests of this kind at once in the workspace (Retry-After)",
    "501": "Not supported by this backend (a capability it lacks)",
    "503": "Store unavailable or no worker free in time (Retry-After)",
}


def _statuses(method: str, path: str, operation: dict[str, Any]) -> set[str]:
    """The error statuses an operation can answer besides those it declares itself: the
    rules of docs/wire-decisions.md (E1-E10, W1-W5) applied to every ``/v1`` route."""
    found = {"400", "401"}
    idempotent = method == "delete" and not path.startswith("/v1/auth/")  # W2: never 404
    if ("{" in path or (method, path) in _NAMES_AN_ID) and not idempotent:
        found.add("404")
    if "requestBody" in operation:
        found.add("413")
    if (method, path) not in _NO_STORE:
        found |= {"429", "503"}
    return found


#: Query parameters the route needs although it reads them as optional, because an
#: undocumented alias may stand in for them (R5: ``conversationId``).
_REQUIRED_QUERY = {("get", "/v1/reasoning/steps"): {"conversation_id"}}


def _corrected(document: dict[str, Any]) -> dict[str, Any]:
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    schemas.pop("HTTPValidationError", None)
    schemas.pop("ValidationError", None)
    schemas["ErrorResponse"] = _ERROR_SCHEMA
    for path, operations in document.get("paths", {}).items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                if parameter.get("name") in _REQUIRED_QUERY.get((method, path), ()):
                    parameter["required"] = True
                    schema = parameter.get("schema", {})
                    options = schema.pop("anyOf", None)
                    if options:  # ``str | None``: the string alternative
                        schema.update(next(o for o in options if o.get("type") != "null"))
            responses = operation.setdefault("responses", {})
            responses.pop("422", None)
            if not path.startswith("/v1"):
                continue
            for code in sorted(_statuses(method, path, operation) | set(responses)):
                if code in _ERRORS and not responses.get(code, {}).get("content"):
                    responses[code] = _error(_ERRORS[code], retry=code in ("429", "503"))
    return document


def install_openapi(app: FastAPI) -> None:
    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = _corrected(
                get_openapi(
                    title=app.title,
                    version=app.version,
                    description=app.description,
                    routes=app.routes,
                    tags=app.openapi_tags,
                )
            )
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
