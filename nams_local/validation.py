"""Input rules shared by every backend and the server, so all refuse the same things.

Each check raises ``InvalidInputError`` before anything is written.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
from typing import Any

from .backend import MAX_BULK_MESSAGES, MAX_LIST_LIMIT
from .errors import InvalidInputError
from .json_depth import MAX_JSON_DEPTH, check_json_depth
from .models import MESSAGE_ROLES, NewMessage, SearchMode, ToolCallStatus

__all__ = [
    "DATE_SCHEMA",
    "MAX_DURATION_MS",
    "MAX_ENTITY_NAME_CHARS",
    "MAX_ID_CHARS",
    "MAX_JSON_DEPTH",
    "check_date",
    "check_entity_name",
    "check_id",
    "check_json_depth",
    "check_limit",
    "check_message",
    "check_messages",
    "check_metadata",
    "check_mode",
    "check_present",
    "check_query",
    "check_required",
    "check_scalar_map",
    "check_score",
    "check_string_map",
    "check_tool_call",
]


def check_limit(limit: int, *, name: str = "limit", maximum: int = MAX_LIST_LIMIT) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= maximum:
        raise InvalidInputError(f"{name} must be an integer from 1 to {maximum}, got {limit!r}")
    return limit


def check_message(role: str, content: str) -> None:
    if role not in MESSAGE_ROLES:
        raise InvalidInputError(
            f"invalid role {role!r}: must be one of {', '.join(sorted(MESSAGE_ROLES))}"
        )
    if not isinstance(content, str) or not content.strip():
        raise InvalidInputError("message content must be a non-empty string")


def check_metadata(metadata: Mapping[str, Any] | None, name: str = "metadata") -> None:
    """Free-form objects are stored as JSON: it must be an object that JSON can encode,
    nested at most ``MAX_JSON_DEPTH`` deep (deeper rows once made every later read fail)."""
    if metadata is None:
        return
    if not isinstance(metadata, Mapping):
        raise InvalidInputError(f"{name} must be an object")
    check_json_depth(metadata, name)  # before encoding: json.dumps recurses
    try:
        json.dumps(metadata, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} is not JSON-encodable: {exc}") from None


def check_scalar_map(value: Mapping[str, Any] | None, what: str) -> None:
    """Conversation metadata: an object whose values are JSON scalars (string, number,
    boolean, null), stored and returned as given. Nested objects and arrays are refused:
    the hosted spec declares a flat map, and a flat map is what every hosted client can
    read back (docs/wire-decisions.md, W1). Non-finite numbers cannot be JSON."""
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{what} must be an object")
    for key, item in value.items():
        if not isinstance(key, str):
            raise InvalidInputError(f"{what} keys must be strings")
        if item is None or isinstance(item, str | bool | int):
            continue
        if isinstance(item, float) and math.isfinite(item):
            continue
        raise InvalidInputError(
            f"{what}.{key} must be a string, number, boolean or null (no objects or arrays)"
        )


def check_string_map(value: Mapping[str, Any] | None, what: str) -> None:
    """Conversation metadata and entity properties are string → string (hosted contract)."""
    if value is not None and not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise InvalidInputError(f"{what} must map strings to strings")
    if value is not None:
        check_json_depth(value, what)


#: Largest tool-call duration accepted (2^53 - 1 ms: exact in JSON numbers everywhere).
MAX_DURATION_MS = 2**53 - 1


def check_tool_call(
    input: str, status: ToolCallStatus | str | None, duration_ms: int | None
) -> ToolCallStatus:
    """Validate a tool call's fields; return its status with legacy names rewritten."""
    if not isinstance(input, str):
        raise InvalidInputError("input must be a string (JSON text)")
    try:
        parsed = ToolCallStatus.parse(status)
    except ValueError:
        raise InvalidInputError(f"invalid tool call status {status!r}") from None
    if duration_ms is not None and (
        isinstance(duration_ms, bool)
        or not isinstance(duration_ms, int)
        or not 0 <= duration_ms <= MAX_DURATION_MS
    ):
        raise InvalidInputError(f"duration_ms must be an integer from 0 to {MAX_DURATION_MS}")
    return parsed


def check_present(value: str | None, name: str) -> str:
    """A required text that may be blank (the official SDK sends ``" "`` as a placeholder
    for a reasoning step without thought or action); only a missing or empty one is refused."""
    if not isinstance(value, str) or value == "":
        raise InvalidInputError(f"{name} is required")
    return value


def check_messages(messages: Sequence[NewMessage]) -> None:
    if not messages:
        raise InvalidInputError("messages must not be empty")
    if len(messages) > MAX_BULK_MESSAGES:
        raise InvalidInputError(
            f"at most {MAX_BULK_MESSAGES} messages per bulk request, got {len(messages)}"
        )
    for index, message in enumerate(messages):
        try:
            check_message(message.role, message.content)
            check_metadata(message.metadata)
        except InvalidInputError as exc:
            raise InvalidInputError(f"messages[{index}]: {exc.message}") from None


def check_query(query: str) -> str:
    if not isinstance(query, str) or not query.strip():
        raise InvalidInputError("query must be a non-empty string")
    return query


#: Longest entity name accepted (characters, after trimming). A name is a few words; the
#: bound keeps name resolution's work per write small and predictable (issue 15: two
#: near-identical 12,000-character names once took 25 s to compare).
MAX_ENTITY_NAME_CHARS = 512

#: Longest id a delete-by-path route takes: generated ids are 36 characters; a longer
#: one is a client bug (or an attack), refused before any lookup.
MAX_ID_CHARS = 256


def check_id(value: str, name: str) -> str:
    """An id named in a path: 1 to ``MAX_ID_CHARS`` characters, not blank, else 400. (Any
    other string is an id that matches nothing, as on every other route.)"""
    if not value or not value.strip():
        raise InvalidInputError(f"{name} must be a non-blank id")
    if len(value) > MAX_ID_CHARS:
        raise InvalidInputError(
            f"{name} is too long: at most {MAX_ID_CHARS} characters, got {len(value)}"
        )
    return value


def check_entity_name(value: str | None, name: str = "name") -> str:
    """A required entity name of at most ``MAX_ENTITY_NAME_CHARS``; returned trimmed."""
    text = check_required(value, name)
    if len(text) > MAX_ENTITY_NAME_CHARS:
        raise InvalidInputError(
            f"{name} is too long: at most {MAX_ENTITY_NAME_CHARS} characters, got {len(text)}"
        )
    return text


def check_required(value: str | None, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{name} is required")
    return value.strip()


def check_score(score: float | None) -> None:
    if score is None:
        return
    if isinstance(score, bool) or not isinstance(score, int | float) or math.isnan(score):
        raise InvalidInputError(f"user_score must be a number from 0 to 1, got {score!r}")
    if not 0.0 <= float(score) <= 1.0:
        raise InvalidInputError(f"user_score must be from 0 to 1, got {score!r}")


def check_mode(mode: str | None) -> SearchMode | None:
    if mode is None or mode in ("text", "vector", "hybrid"):
        return mode  # type: ignore[return-value]
    raise InvalidInputError(f"search mode must be text, vector or hybrid, got {mode!r}")


#: A date as precise as it was stated: ``2021``, ``2021-03`` or ``2021-03-15``.
_PARTIAL_DATE = re.compile(r"\d{4}(?:-(?:0[1-9]|1[0-2]))?")
_FULL_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
#: RFC 3339 date-time (what JSON Schema's ``date-time`` format means), seconds required.
_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})")

#: The same rule as a JSON Schema (the server's OpenAPI document publishes it).
DATE_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "pattern": "^[0-9]{4}(-(0[1-9]|1[0-2]))?$"},
        {"type": "string", "format": "date"},
        {"type": "string", "format": "date-time"},
    ]
}


def check_date(value: str | None, name: str) -> str | None:
    """A validity date (``validFrom``, ``validUntil``, ``asOf``): ``YYYY``, ``YYYY-MM``, a
    calendar date ``YYYY-MM-DD`` or an RFC 3339 date-time (its UTC day is kept): exactly
    ``DATE_SCHEMA``. Returned as precise as stated."""
    if value is None:
        return None
    wrong = f"{name} must be a date such as 2021, 2021-03 or 2021-03-15, got {value!r}"
    if not isinstance(value, str) or len(value) > 40:
        raise InvalidInputError(f"{name} must be a date such as 2021, 2021-03 or 2021-03-15")
    if _PARTIAL_DATE.fullmatch(value):
        return value
    try:
        if _FULL_DATE.fullmatch(value):
            return date.fromisoformat(value).isoformat()
        if not _DATE_TIME.fullmatch(value):
            raise InvalidInputError(wrong)
        moment = datetime.fromisoformat(value.upper().replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInputError(f"{name} is not a calendar date: {value!r}") from None
    return moment.astimezone(UTC).date().isoformat()
