"""Request bodies parsed as strict JSON: only finite numbers, no pathological nesting.

Python's ``json`` accepts the non-standard ``NaN`` and ``Infinity`` literals. Stored (in
relationship properties, say) they would come back out of a response that the JSON encoder
refuses to write (or silently as ``null``), so a bad request would corrupt a later,
innocent one. ``1e999`` parses to infinity the same way. A body nested deeper than the
interpreter's recursion limit, or an integer longer than its digit limit, would escape as
an unexpected error. A lone surrogate (``"\\ud800"``: valid JSON, not Unicode text) would
reach the store, which cannot encode it, and fail midway. All are refused here as
malformed JSON (400), before any handler.

The parser is plain ``json`` with no web framework, so both apps that read JSON bodies
(the ``/v1`` server and the TCK bridge) share it without importing each other.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

__all__ = ["parse_strict_json"]


def _refuse_constant(name: str) -> Any:
    raise json.JSONDecodeError(f"{name} is not valid JSON", name, 0)


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999 parses to infinity
        raise json.JSONDecodeError(f"{text} is out of range", text, 0)
    return value


#: Where a lone surrogate can come from: the raw body is UTF-8, which cannot carry one, so
#: only a ``\\uD800``-``\\uDFFF`` escape can (a pair of them is one real character).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _check_text(value: Any, text: str) -> Any:
    """``value``, once its strings are known to be encodable (checked only when ``text``
    holds a surrogate escape, so ordinary bodies pay nothing)."""
    if _SURROGATE_ESCAPE.search(text) is not None:
        try:
            json.dumps(value, ensure_ascii=False).encode()
        except UnicodeEncodeError:
            reason = "strings must be valid Unicode (no lone surrogates)"
            raise json.JSONDecodeError(reason, "", 0) from None
    return value


def parse_strict_json(body: bytes) -> Any:
    """``json.loads`` that raises ``JSONDecodeError`` for every non-standard input."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise json.JSONDecodeError("body is not UTF-8", "", exc.start) from None
    try:
        value = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite)
        return _check_text(value, text)
    except RecursionError:
        raise json.JSONDecodeError("nesting too deep", "", 0) from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # e.g. an integer beyond Python's digit limit
        raise json.JSONDecodeError(str(exc), "", 0) from None
