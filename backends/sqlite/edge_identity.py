"""When a new relationship is one the graph already holds, so it is reused, not doubled.

Running the same script twice (the README's first example on one ``memory.db``) used to
add a second, identical ``WORKS_AT`` edge each time. A relationship is *identical* to a
new one when it has the same source entity, the same target entity and the same type
(compared as the validity rules compare types) and is still *current* (open: no
``valid_until``). ``validity.write_fact`` finds it among the subject's edges and reuses it;
this module decides what the reused edge keeps (docs/wire-decisions.md, H4).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Row, update

from . import schema as s
from .rows import dumps, loads
from .store import Ctx

__all__ = ["enrich_edge"]

r = s.relationships


def enrich_edge(
    ctx: Ctx, row: Row[Any], properties: dict[str, Any], confidence: float | None
) -> bool:
    """As for a reused entity, the identical edge gains property keys it did not have and a
    confidence if it had none; nothing it holds is overwritten (the first statement keeps
    its provenance). ``True`` when the row changed (its mirror needs refreshing)."""
    held: dict[str, Any] = loads(row.properties)
    merged = {**properties, **held}
    kept = row.confidence if row.confidence is not None else confidence
    if merged == held and kept == row.confidence:
        return False
    ctx.conn.execute(
        update(r).where(r.c.pk == row.pk).values(properties=dumps(merged), confidence=kept)
    )
    return True
