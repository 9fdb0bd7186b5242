"""The one depth bound for every stored JSON value (re-exported by ``validation``).

A module of its own, importing nothing but the errors, so a Cypher worker process (which
checks parameters and reads stored properties) does not import the API models.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import InvalidInputError

__all__ = ["MAX_JSON_DEPTH", "check_json_depth"]

#: Deepest nesting of objects/arrays accepted in any stored JSON value (message metadata,
#: entity and relationship properties, Cypher parameters). The scalar at the bottom of
#: ``{"a": {"a": 1}}`` is at depth 2. One bound, honoured by every write and every read, so
#: no stored row can be too deep for a later read to render (issue 15).
MAX_JSON_DEPTH = 32


def check_json_depth(value: Any, name: str, *, maximum: int = MAX_JSON_DEPTH) -> None:
    """Refuse a value nested deeper than ``maximum`` containers (iterative: no recursion
    limit can be hit however deep the input is)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth + 1 > maximum:
            raise InvalidInputError(f"{name} is nested deeper than {maximum} levels")
        stack.extend((child, depth + 1) for child in children)
