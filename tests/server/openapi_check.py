"""Validate response bodies against the hosted NAMS spec (Swagger 2.0, ``definitions``).

``data/nams-openapi.json`` is a byte-for-byte copy of the hosted spec
(``neo4j-labs/nams-plugins`` ``docs/nams-openapi.json`` @ ``5e610ef``), pinned by SHA-256 so a
silently edited copy fails loudly. Swagger response schemas live under
``paths[path][method]["responses"][status]["schema"]`` and refer to ``#/definitions/...``;
they are validated with JSON Schema draft 4 (Swagger 2.0's dialect) with the definitions
attached to the root, so every ``$ref`` resolves.

The spec marks no response field as required, so type checks alone would pass an empty
object. ``missing_properties`` adds the other half: every property the schema declares must
be present, unless the caller names it as optional for that response.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft4Validator

__all__ = [
    "SPEC_PATH",
    "SPEC_SHA256",
    "assert_matches_spec",
    "missing_properties",
    "response_schema",
    "spec",
    "spec_operations",
]

SPEC_PATH = Path(__file__).parent / "data" / "nams-openapi.json"
SPEC_SHA256 = "c757bea69e02ca436d7501b4ccb2758a6c8799807486c57ab290b54de1f6d41f"


@cache
def spec() -> dict[str, Any]:
    raw = SPEC_PATH.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    assert digest == SPEC_SHA256, f"{SPEC_PATH} is not the pinned hosted spec ({digest})"
    loaded: dict[str, Any] = json.loads(raw)
    return loaded


def spec_operations(prefixes: Iterable[str]) -> set[tuple[str, str]]:
    """``(METHOD, path)`` of every spec operation whose path starts with one of ``prefixes``."""
    wanted = tuple(prefixes)
    return {
        (method.upper(), path)
        for path, ops in spec()["paths"].items()
        if path.startswith(wanted)
        for method in ops
    }


def response_schema(method: str, path: str, status: int) -> dict[str, Any]:
    """The schema of one documented response, with ``definitions`` attached for ``$ref``."""
    operation = spec()["paths"][path][method.lower()]
    responses = operation["responses"]
    assert str(status) in responses, (
        f"{method} {path}: status {status} is not documented (has {sorted(responses)})"
    )
    schema = responses[str(status)].get("schema")
    assert schema is not None, f"{method} {path} {status}: no schema in the spec"
    return {**schema, "definitions": spec()["definitions"]}


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if ref is None:
        return node
    name = ref.removeprefix("#/definitions/")
    resolved: dict[str, Any] = spec()["definitions"][name]
    return resolved


def missing_properties(
    schema: dict[str, Any], body: Any, optional: frozenset[str] = frozenset(), at: str = "$"
) -> list[str]:
    """Declared properties absent from ``body`` (recursing into objects and array items)."""
    node = _resolve(schema)
    missing: list[str] = []
    if node.get("type") == "array" and isinstance(body, list):
        for index, item in enumerate(body):
            missing += missing_properties(node.get("items", {}), item, optional, f"{at}[{index}]")
    properties = node.get("properties")
    if properties and isinstance(body, dict):
        for name, sub in properties.items():
            if name not in body:
                if name not in optional:
                    missing.append(f"{at}.{name}")
                continue
            missing += missing_properties(sub, body[name], optional, f"{at}.{name}")
    return missing


def assert_matches_spec(
    method: str,
    path: str,
    status: int,
    body: Any,
    *,
    optional: Iterable[str] = (),
) -> None:
    """``body`` is valid for the documented response and has every declared field.

    ``optional`` names properties (by name, at any depth) that may be absent, such as
    ``score`` outside search results.
    """
    schema = response_schema(method, path, status)
    errors = sorted(Draft4Validator(schema).iter_errors(body), key=lambda e: list(e.path))
    assert not errors, f"{method} {path} {status}: " + "; ".join(
        f"{'/'.join(map(str, e.path)) or '$'}: {e.message}" for e in errors[:5]
    )
    missing = missing_properties(schema, body, frozenset(optional))
    assert not missing, f"{method} {path} {status}: missing {missing}"
