"""The hosted NAMS OpenAPI (Swagger 2.0) spec as a test oracle.

``OpenApiSpec.load()`` reads ``shared/reference/nams-openapi.json`` (the hosted service's
published spec, the source of truth for the wire); ``match`` maps a concrete request
(``POST /v1/conversations/abc/messages``) to its operation, and ``request_errors`` /
``response_errors`` validate JSON bodies against the operation's schemas with
``jsonschema`` (``$ref`` resolved into ``definitions``). Error answers the spec does not
list must still be the hosted error body, ``{"error": "<text>"}``. ``load`` applies the
documented tolerances (``with_tolerances``): where the server accepts more than the spec
declares on purpose, the check knows it.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from jsonschema import Draft4Validator

__all__ = ["SPEC_ENV", "OpenApiSpec", "Operation", "find_spec", "with_tolerances"]

SPEC_NAME = "nams-openapi.json"
#: Set to a path to use another copy of the spec.
SPEC_ENV = "NAMS_OPENAPI_SPEC"
ERROR_BODY: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "properties": {"error": {"type": "string"}},
}


#: The repository's own byte copy of the spec, pinned by SHA-256 in ``tests/server``.
PINNED_SPEC = Path(__file__).resolve().parent.parent / "server" / "data" / SPEC_NAME


def find_spec(start: Path | None = None, *, pinned: Path | None = PINNED_SPEC) -> Path:
    """``$NAMS_OPENAPI_SPEC``, else ``shared/reference/<spec>`` in the nearest ancestor of
    this file that has one (CI lays ``shared/`` beside the checkout), else the pinned copy
    the repository carries (so a bare clone can run the checks too)."""
    configured = os.environ.get(SPEC_ENV)
    if configured:
        return Path(configured)
    here = (start or Path(__file__)).resolve()
    for folder in here.parents:
        candidate = folder / "shared" / "reference" / SPEC_NAME
        if candidate.is_file():
            return candidate
    if pinned is not None and pinned.is_file():
        return pinned
    raise FileNotFoundError(f"no shared/reference/{SPEC_NAME} above {here}; set {SPEC_ENV}")


@dataclass(frozen=True)
class Operation:
    method: str
    #: The spec's path template, e.g. ``/v1/conversations/{id}/messages``.
    template: str
    spec: Mapping[str, Any]

    @property
    def body_parameter(self) -> Mapping[str, Any] | None:
        for parameter in self.spec.get("parameters", []):
            if parameter.get("in") == "body":
                found: Mapping[str, Any] = parameter
                return found
        return None

    @property
    def statuses(self) -> set[int]:
        return {int(code) for code in self.spec.get("responses", {}) if code.isdigit()}


class OpenApiSpec:
    def __init__(self, document: Mapping[str, Any]) -> None:
        if document.get("swagger") != "2.0":
            raise ValueError("expected a Swagger 2.0 document")
        self.document = document
        self.definitions: Mapping[str, Any] = document.get("definitions", {})
        self._templates = [(template, template.split("/")[1:]) for template in document["paths"]]

    @classmethod
    def load(cls, path: Path | None = None) -> OpenApiSpec:
        return _load(str(path or find_spec()))

    def match(self, method: str, url: str) -> Operation | None:
        """The operation for a concrete request, or None (not a spec route: an extension).

        Literal segments beat ``{parameters}``, so ``/v1/entities/graph`` is the graph
        route, not ``/v1/entities/{id}``.
        """
        parts = [unquote(s) for s in urlsplit(url).path.split("/")[1:]]
        best: tuple[int, str] | None = None
        for template, segments in self._templates:
            if len(segments) != len(parts):
                continue
            literal = 0
            for pattern, actual in zip(segments, parts, strict=True):
                if pattern.startswith("{") and pattern.endswith("}"):
                    if not actual:
                        break
                elif pattern != actual:
                    break
                else:
                    literal += 1
            else:
                if method.lower() in self.document["paths"][template] and (
                    best is None or literal > best[0]
                ):
                    best = (literal, template)
        if best is None:
            return None
        template = best[1]
        return Operation(method.upper(), template, self.document["paths"][template][method.lower()])

    def _errors(self, schema: Mapping[str, Any], instance: Any) -> list[str]:
        validator = Draft4Validator({"definitions": self.definitions, "allOf": [schema]})
        return sorted(
            f"{'/'.join(str(p) for p in error.absolute_path) or '<body>'}: {error.message}"
            for error in validator.iter_errors(instance)
        )

    def request_errors(self, method: str, url: str, body: Any) -> list[str]:
        """What is wrong with a request body (``None`` = no body) for this route."""
        operation = self.match(method, url)
        if operation is None:
            return [f"{method} {url} is not a route of the spec"]
        parameter = operation.body_parameter
        if parameter is None:
            return [] if body is None else [f"{operation.template} takes no body"]
        if body is None:
            return [f"{operation.template} requires a body"] if parameter.get("required") else []
        return self._errors(parameter.get("schema", {}), body)

    def response_errors(self, method: str, url: str, status: int, body: Any) -> list[str]:
        """What is wrong with an answer: an undocumented success status, or a body that
        does not fit the documented schema (undocumented errors: ``{"error": str}``)."""
        operation = self.match(method, url)
        if operation is None:
            return [f"{method} {url} is not a route of the spec"]
        documented = operation.spec.get("responses", {}).get(str(status))
        if documented is None:
            if status < 400:
                return [f"status {status} is not documented for {method} {operation.template}"]
            return self._errors(ERROR_BODY, body)
        schema = documented.get("schema")
        if schema is None:
            return []
        errors = self._errors(schema, body)
        if status >= 400:
            errors += self._errors(ERROR_BODY, body)
        return errors


#: Where nams-local deliberately accepts and returns more than the hosted spec declares,
#: written down in docs/wire-decisions.md; the check applies the spec with these widened.
#: W1: conversation metadata values are JSON scalars (hosted stores them; clients send
#: ``{"seq": 1}``), still a flat map: objects and arrays stay violations.
SCALAR = {"type": ["string", "number", "integer", "boolean", "null"]}
TOLERATED_METADATA = (
    "handlers.createConversationRequest",
    "handlers.Conversation",
    "handlers.ConversationResponse",
    "handlers.CreateConversationResponse",
)


def with_tolerances(document: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the spec with the documented tolerances applied."""
    widened: dict[str, Any] = json.loads(json.dumps(document))
    for name in TOLERATED_METADATA:
        properties = widened["definitions"][name]["properties"]
        properties["metadata"] = {**properties["metadata"], "additionalProperties": SCALAR}
    return widened


@functools.cache
def _load(path: str) -> OpenApiSpec:
    return OpenApiSpec(with_tolerances(json.loads(Path(path).read_text(encoding="utf-8"))))
