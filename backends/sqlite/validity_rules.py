"""The supersession settings, a row's validity fields, and whether an edge held at a date.

Apart from ``validity.py`` (the writes) because the store and its graph mirror need these,
and the writes import the store.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .rows import when

__all__ = [
    "DEFAULT_SINGLE_VALUED",
    "SYMMETRIC_TYPES",
    "Supersession",
    "edge_validity",
    "holds_at",
    "type_key",
]


#: Relationship types a subject holds one of at a time (compared by :func:`type_key`).
DEFAULT_SINGLE_VALUED: frozenset[str] = frozenset(
    {
        "LIVES_IN",
        "WORKS_AT",
        "STUDIES_AT",
        "MARRIED_TO",
        "PARTNER_OF",
        "HAS_ROLE",
        "ROLE",
        "JOB_TITLE",
        "REPORTS_TO",
    }
)
#: Types whose direction carries no meaning: the tie of either end is the one closed.
SYMMETRIC_TYPES: frozenset[str] = frozenset({"MARRIED_TO", "PARTNER_OF"})


def type_key(type_: str) -> str:
    """``"lives in"``, ``"Lives-In"`` and ``"LIVES_IN"`` are one type for these rules."""
    return "_".join("".join(c if c.isalnum() else " " for c in type_).upper().split())


@dataclass(frozen=True, slots=True)
class Supersession:
    """Which types are single-valued, and whether writes supersede at all.

    ``enabled=False`` is today's engine before validity (every write adds an open edge;
    the ``updates`` benchmark's baseline): edges still carry the fields, never closed.
    """

    single_valued: frozenset[str] = DEFAULT_SINGLE_VALUED
    enabled: bool = True
    symmetric: frozenset[str] = field(default=SYMMETRIC_TYPES)

    @classmethod
    def of(cls, single_valued: Iterable[str] | None, enabled: bool = True) -> Supersession:
        if single_valued is None:
            return cls(enabled=enabled)
        return cls(frozenset(type_key(t) for t in single_valued), enabled)

    def single(self, type_: str) -> bool:
        return type_key(type_) in self.single_valued


def edge_validity(row: Any) -> dict[str, Any]:
    """The validity fields of a ``relationships`` row, as model keyword arguments."""
    return {
        "valid_from": row.valid_from,
        "valid_until": row.valid_until,
        "current": row.valid_until is None,
        "superseded_by": row.superseded_by,
        "recorded_at": when(row.created_at),
        "invalidated_at": when(row.invalidated_at),
        "source_message_id": row.source_message_id,
    }


def holds_at(valid_from: str | None, valid_until: str | None, as_of: str) -> bool:
    """Does an edge hold at ``as_of`` (a partial ISO date)? Its end is exclusive, at the
    precision stated: an edge until ``2026-10`` no longer holds on ``2026-10-05``."""
    if valid_from is not None and as_of[: len(valid_from)] < valid_from:
        return False
    return valid_until is None or as_of[: len(valid_until)] < valid_until
