"""The bounds of ``nams_local.items`` checked in one place, before a batch runs.

Separate from ``items`` because it needs ``validation`` (the one JSON depth bound), which
imports ``backend``, which names the item types: keeping the checks here keeps that chain
acyclic.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import InvalidInputError
from .items import (
    MAX_ITEM_BATCH,
    MAX_ITEM_KEY,
    MAX_ITEM_LIMIT,
    MAX_ITEM_OFFSET,
    MAX_ITEM_QUERY,
    MAX_ITEM_TEXT,
    MAX_ITEM_VALUE_BYTES,
    MAX_NAMESPACE_DEPTH,
    MAX_NAMESPACE_LABEL,
    ItemGet,
    ItemListNamespaces,
    ItemOp,
    ItemPut,
    ItemSearch,
)
from .validation import check_json_depth

__all__ = ["check_item_ops"]


def _check_namespace(namespace: object, *, allow_empty: bool) -> None:
    if not isinstance(namespace, tuple):
        raise InvalidInputError("a namespace must be a tuple of strings")
    if not namespace and not allow_empty:
        raise InvalidInputError("a namespace needs at least one label")
    if len(namespace) > MAX_NAMESPACE_DEPTH:
        raise InvalidInputError(f"a namespace has at most {MAX_NAMESPACE_DEPTH} labels")
    for label in namespace:
        if not isinstance(label, str) or not label:
            raise InvalidInputError("namespace labels must be non-empty strings")
        if len(label) > MAX_NAMESPACE_LABEL:
            raise InvalidInputError(
                f"a namespace label has at most {MAX_NAMESPACE_LABEL} characters"
            )
        if "\x00" in label or "." in label:
            raise InvalidInputError("namespace labels cannot contain '.' or NUL")


def _check_page(limit: object, offset: object) -> None:
    if not isinstance(limit, int) or isinstance(limit, bool) or not 0 <= limit <= MAX_ITEM_LIMIT:
        raise InvalidInputError(f"limit must be an integer from 0 to {MAX_ITEM_LIMIT}")
    if (
        not isinstance(offset, int)
        or isinstance(offset, bool)
        or not 0 <= offset <= MAX_ITEM_OFFSET
    ):
        raise InvalidInputError(f"offset must be an integer from 0 to {MAX_ITEM_OFFSET}")


def _check_value(value: Mapping[str, Any]) -> None:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise InvalidInputError("an item value must be an object with string keys")
    check_json_depth(value, "value")
    try:
        encoded = json.dumps(value, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"an item value must be JSON: {exc}") from None
    if len(encoded.encode("utf-8")) > MAX_ITEM_VALUE_BYTES:
        raise InvalidInputError(f"an item value is at most {MAX_ITEM_VALUE_BYTES} bytes as JSON")


def _check_put(op: ItemPut) -> None:
    _check_namespace(op.namespace, allow_empty=False)
    if not isinstance(op.key, str) or len(op.key) > MAX_ITEM_KEY:
        raise InvalidInputError(f"a key is a string of at most {MAX_ITEM_KEY} characters")
    if op.value is not None:
        _check_value(op.value)
    if op.text is not None and len(op.text) > MAX_ITEM_TEXT:
        raise InvalidInputError(f"indexed text is at most {MAX_ITEM_TEXT} characters")
    if op.ttl is not None and (
        isinstance(op.ttl, bool) or not isinstance(op.ttl, int | float) or not op.ttl > 0
    ):
        raise InvalidInputError("ttl must be a positive number of minutes")
    if op.ttl is not None and not math.isfinite(op.ttl):
        raise InvalidInputError("ttl must be finite")


def _check_search(op: ItemSearch) -> None:
    _check_namespace(op.prefix, allow_empty=True)
    _check_page(op.limit, op.offset)
    if op.query is not None and (not isinstance(op.query, str) or len(op.query) > MAX_ITEM_QUERY):
        raise InvalidInputError(f"a query is a string of at most {MAX_ITEM_QUERY} characters")
    if op.filter is not None:
        if not isinstance(op.filter, Mapping):
            raise InvalidInputError("a filter must be an object")
        check_json_depth(op.filter, "filter")


def _check_list(op: ItemListNamespaces) -> None:
    _check_page(op.limit, op.offset)
    if op.max_depth is not None and (
        not isinstance(op.max_depth, int) or isinstance(op.max_depth, bool) or op.max_depth < 1
    ):
        raise InvalidInputError("max_depth must be a positive integer")
    for _, path in op.conditions:
        _check_namespace(path, allow_empty=True)


def check_item_ops(ops: Sequence[ItemOp]) -> None:
    """Refuse a batch that breaks a bound (before anything is written)."""
    if len(ops) > MAX_ITEM_BATCH:
        raise InvalidInputError(f"a batch has at most {MAX_ITEM_BATCH} operations")
    for op in ops:
        if isinstance(op, ItemPut):
            _check_put(op)
        elif isinstance(op, ItemGet):
            _check_namespace(op.namespace, allow_empty=False)
            if not isinstance(op.key, str) or len(op.key) > MAX_ITEM_KEY:
                raise InvalidInputError(f"a key is a string of at most {MAX_ITEM_KEY} characters")
        elif isinstance(op, ItemSearch):
            _check_search(op)
        elif isinstance(op, ItemListNamespaces):
            _check_list(op)
        else:
            raise InvalidInputError(f"unknown item operation {type(op).__name__}")
