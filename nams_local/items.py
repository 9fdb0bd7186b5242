"""Namespaced key/value items: the operations a document store (LangGraph's ``BaseStore``)
needs from a backend, as plain typed values.

The framework adapter (``nams_local.integrations.langgraph``) translates LangGraph's ops
into these, and a backend that can hold items (``backend.SupportsItems``: the local engine)
runs a whole batch in one transaction. They live at the types layer so the engine can
implement them without importing any framework, and the adapter can use them without
importing any engine.

The bounds below apply to every implementation (``item_checks.check_item_ops``): over a
bound the whole batch is refused with ``InvalidInputError`` and nothing is written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from .errors import InvalidInputError

__all__ = [
    "MAX_ITEM_BATCH",
    "MAX_ITEM_KEY",
    "MAX_ITEM_LIMIT",
    "MAX_ITEM_OFFSET",
    "MAX_ITEM_QUERY",
    "MAX_ITEM_TEXT",
    "MAX_ITEM_VALUE_BYTES",
    "MAX_NAMESPACE_DEPTH",
    "MAX_NAMESPACE_LABEL",
    "ItemGet",
    "ItemListNamespaces",
    "ItemOp",
    "ItemPut",
    "ItemResult",
    "ItemSearch",
    "StoredItem",
    "matches_filter",
    "namespace_matches",
]

#: Operations in one batch.
MAX_ITEM_BATCH = 1000
#: Labels in one namespace, characters in one label, characters in one key.
MAX_NAMESPACE_DEPTH = 16
MAX_NAMESPACE_LABEL = 256
MAX_ITEM_KEY = 1024
#: A value's size as compact JSON (UTF-8 bytes).
MAX_ITEM_VALUE_BYTES = 1 << 20
#: ``limit`` of a search or a namespace listing, and the furthest ``offset``.
MAX_ITEM_LIMIT = 1000
MAX_ITEM_OFFSET = 100_000
#: Characters of a search query, and of the text indexed for one item.
MAX_ITEM_QUERY = 4000
MAX_ITEM_TEXT = 100_000


@dataclass(frozen=True, slots=True)
class StoredItem:
    """One item as stored; ``score`` is set by a search with a query."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    score: float | None = None


@dataclass(frozen=True, slots=True)
class ItemGet:
    namespace: tuple[str, ...]
    key: str
    #: Push the item's expiry back by its TTL (items without a TTL never expire).
    refresh_ttl: bool = True


@dataclass(frozen=True, slots=True)
class ItemPut:
    """Create or replace an item; ``value=None`` deletes it.

    ``text`` is what search indexes for the item (the adapter extracts it from the fields
    the caller names); ``None`` keeps the item out of ranked search (it still matches
    filters and is listed after the ranked hits). ``ttl`` is in minutes, as in LangGraph.
    """

    namespace: tuple[str, ...]
    key: str
    value: Mapping[str, Any] | None
    text: str | None = None
    ttl: float | None = None


@dataclass(frozen=True, slots=True)
class ItemSearch:
    """Items under ``prefix`` whose value matches ``filter`` (LangGraph's JSON filter:
    nested equality and ``$eq $ne $gt $gte $lt $lte``); ranked by ``query`` when given,
    else newest update first."""

    prefix: tuple[str, ...]
    query: str | None = None
    filter: Mapping[str, Any] | None = None
    limit: int = 10
    offset: int = 0
    refresh_ttl: bool = True


@dataclass(frozen=True, slots=True)
class ItemListNamespaces:
    """Namespaces holding at least one item, sorted; ``"*"`` in a condition matches any
    one label; ``max_depth`` truncates (then de-duplicates) the namespaces."""

    conditions: tuple[tuple[Literal["prefix", "suffix"], tuple[str, ...]], ...] = ()
    max_depth: int | None = None
    limit: int = 100
    offset: int = 0


ItemOp = ItemGet | ItemPut | ItemSearch | ItemListNamespaces
ItemResult = StoredItem | list[StoredItem] | list[tuple[str, ...]] | None


def namespace_matches(
    kind: Literal["prefix", "suffix"], path: Sequence[str], ns: Sequence[str]
) -> bool:
    """LangGraph's match condition: ``path`` (``"*"`` = any label) at the start or end."""
    if len(ns) < len(path):
        return False
    if kind == "suffix":
        ns, path = ns[len(ns) - len(path) :], path
    else:
        ns = ns[: len(path)]
    return all(p == "*" or n == p for n, p in zip(ns, path, strict=True))


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InvalidInputError(f"cannot compare {value!r} as a number") from None


def _operator(value: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return bool(value == operand)
    if operator == "$ne":
        return bool(value != operand)
    if operator in ("$gt", "$gte", "$lt", "$lte"):
        if value is None:
            return False
        a, b = _number(value), _number(operand)
        return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[operator]
    raise InvalidInputError(f"unsupported filter operator {operator!r}")


def _compare(value: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in wanted):
            return all(_operator(value, k, v) for k, v in wanted.items())
        if not isinstance(value, Mapping):
            return False
        return all(_compare(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(wanted)
            and all(_compare(v, w) for v, w in zip(value, wanted, strict=True))
        )
    return bool(value == wanted)


def matches_filter(value: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """LangGraph's ``InMemoryStore`` filter semantics, so every store agrees on them.

    One difference: an ordering operator on a missing field is ``False`` instead of a
    ``TypeError`` (a filter never fails a search), and a non-numeric operand is refused
    as invalid input.
    """
    if not filter:
        return True
    return all(_compare(value.get(k), v) for k, v in filter.items())
