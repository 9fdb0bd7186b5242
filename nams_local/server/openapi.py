"""The published OpenAPI document says what the server really answers.

FastAPI documents a ``422`` with its own ``{"detail": [...]}`` body on every route that
takes parameters. This server answers validation failures with ``400 {"error": ...}``
like hosted NAMS, so the generated document is corrected once, on first request: each
``422`` becomes a ``400`` with the hosted ``ErrorResponse`` schema, and every ``/v1``
operation lists the ``401`` its authentication can produce.
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


def _error(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _ERROR_REF}}}


def _corrected(document: dict[str, Any]) -> dict[str, Any]:
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    schemas.pop("HTTPValidationError", None)
    schemas.pop("ValidationError", None)
    schemas["ErrorResponse"] = _ERROR_SCHEMA
    for path, operations in document.get("paths", {}).items():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            if responses.pop("422", None) is not None:
                responses["400"] = _error("Invalid request: malformed JSON, wrong types")
            if path.startswith("/v1"):
                responses.setdefault("401", _error("Missing or refused API key"))
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
