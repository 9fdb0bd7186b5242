"""Reading a stored JSON value so that one bad row can never fail a read.

Writes refuse values nested deeper than ``MAX_JSON_DEPTH`` (``nams_local.validation``),
but a row written by an older version may be deeper, or damaged. Every list, search,
context and Cypher projection that touches such a row would fail (the response cannot be
serialised), so the value is replaced by a marker object and a warning is logged.
Kept free of SQLAlchemy so the Cypher worker processes can import it cheaply.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from nams_local.errors import InvalidInputError
from nams_local.json_depth import MAX_JSON_DEPTH, check_json_depth
from nams_local.log import LOGGER_NAME

__all__ = ["UNREADABLE_KEY", "loads"]

#: The one key of the object a stored JSON value is replaced by when it cannot be rendered.
UNREADABLE_KEY = "nams_unreadable"

_log = logging.getLogger(LOGGER_NAME)


def loads(value: str | None) -> Any:
    """A stored JSON value (``{}`` for none), or ``{"nams_unreadable": why}`` when it
    cannot be rendered."""
    if not value or value == "{}":  # most stored values: no parse (about 2 us a row)
        return {}
    try:
        parsed = json.loads(value)
        if _may_be_too_deep(value):
            check_json_depth(parsed, "stored JSON value")
    except (RecursionError, ValueError, InvalidInputError) as exc:
        why = exc.message if isinstance(exc, InvalidInputError) else type(exc).__name__
        _log.warning("[nams] a stored JSON value cannot be rendered (%s); replaced", why)
        return {UNREADABLE_KEY: f"{why}: replaced on read"}
    return parsed


def _may_be_too_deep(value: str) -> bool:
    """Whether the text has more opening brackets than the depth bound (two counts in C):
    a value with fewer cannot be nested deeper, whatever its strings hold, so the walk
    over every node is skipped (it was ~4 % of a server's GIL samples under the ``load``
    mix, where every listed or found message reads its metadata)."""
    return value.count("{") + value.count("[") > MAX_JSON_DEPTH
