"""Bounded input of the inspector: form bodies and query parameters.

Forms are ``application/x-www-form-urlencoded`` only (no multipart: nothing here uploads a
file), parsed here with a cap on fields and lengths, so a hostile body is a 400 page and
never a 500 or a stall. The server's body limit (1 MiB by default) applies before this.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import parse_qsl

from starlette.requests import Request

from nams_local.errors import InvalidInputError

__all__ = [
    "MAX_FIELD_CHARS",
    "MAX_FORM_BYTES",
    "MAX_FORM_FIELDS",
    "MAX_QUERY_CHARS",
    "MAX_TEXT_CHARS",
    "PAGE_SIZE",
    "Form",
    "page_param",
    "query_param",
    "read_form",
]

#: A form body larger than this is refused (the longest field is a description).
MAX_FORM_BYTES = 64 * 1024
MAX_FORM_FIELDS = 32
#: Any one field (a description may be long; everything else is far shorter).
MAX_TEXT_CHARS = 20_000
#: Names, types, ids, tokens.
MAX_FIELD_CHARS = 4096
#: A query-string value (search text, a type filter).
MAX_QUERY_CHARS = 500
#: Rows per page in lists.
PAGE_SIZE = 50
_MAX_PAGE = 10_000


class Form:
    """A parsed form: one value per field (a repeated field is refused)."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self._values = dict(values)

    def get(self, name: str, *, max_chars: int = MAX_FIELD_CHARS) -> str | None:
        value = self._values.get(name)
        if value is not None and len(value) > max_chars:
            raise InvalidInputError(f"field {name!r} is too long: at most {max_chars} characters")
        return value

    def require(self, name: str, *, max_chars: int = MAX_FIELD_CHARS) -> str:
        value = self.get(name, max_chars=max_chars)
        if value is None or not value.strip():
            raise InvalidInputError(f"field {name!r} is required")
        return value

    def items(self) -> list[tuple[str, str]]:
        return list(self._values.items())


async def read_form(request: Request) -> Form:
    """The request's form, bounded; ``InvalidInputError`` (a 400 page) for anything else."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        raise InvalidInputError("send the form as application/x-www-form-urlencoded")
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        raise InvalidInputError(f"form too large: at most {MAX_FORM_BYTES} bytes")
    try:
        pairs = parse_qsl(
            body.decode("utf-8"),
            keep_blank_values=True,
            strict_parsing=False,
            max_num_fields=MAX_FORM_FIELDS,
        )
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidInputError(f"malformed form: {exc}") from None
    values: dict[str, str] = {}
    for name, value in pairs:
        if name in values:
            raise InvalidInputError(f"field {name!r} given twice")
        if len(value) > MAX_TEXT_CHARS:
            raise InvalidInputError(f"field {name!r} is too long")
        values[name] = value
    return Form(values)


def query_param(request: Request, name: str, *, max_chars: int = MAX_QUERY_CHARS) -> str | None:
    """A query-string value, stripped, ``None`` when blank; too long is a 400."""
    value = request.query_params.get(name)
    if value is None:
        return None
    if len(value) > max_chars:
        raise InvalidInputError(f"parameter {name!r} is too long: at most {max_chars} characters")
    return value.strip() or None


def page_param(request: Request) -> int:
    """``?page=N`` (1-based), within 1..10000."""
    raw = request.query_params.get("page")
    if raw is None or raw == "":
        return 1
    if not raw.isdigit() or not 1 <= int(raw[:6]) <= _MAX_PAGE or len(raw) > 6:
        raise InvalidInputError(f"parameter 'page' must be a whole number from 1 to {_MAX_PAGE}")
    return int(raw)
