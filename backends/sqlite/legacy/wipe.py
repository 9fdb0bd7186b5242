"""Deleting everything one workspace holds, in one transaction (the TCK's ``clear_all_data``).

Every table is cleared by its ``workspace`` column (child rows follow by cascade), the
full-text and vector index entries of the deleted rows go with them, and the graph mirror is
dropped, so nothing of the workspace survives in memory or on disk. Other workspaces of the
same store are untouched.
"""

from __future__ import annotations

from sqlalchemy import Table, delete, select

from .. import schema as s
from ..conversations import unindex_messages
from ..entities import unindex_entities
from ..store import Ctx

__all__ = ["clear_workspace"]


def _workspace_tables() -> list[Table]:
    """Every table with a ``workspace`` column, children before parents. Tables keyed to
    those rows without a column of their own (mentions, extraction state, canonical names)
    go by cascade; a table added to the schema later is cleared without changes here."""
    return [t for t in reversed(s.metadata.sorted_tables) if "workspace" in t.c]


def _pks(ctx: Ctx, table: Table) -> list[int]:
    rows = ctx.conn.execute(select(table.c.pk).where(table.c.workspace == ctx.workspace))
    return [int(pk) for (pk,) in rows]


def clear_workspace(ctx: Ctx) -> None:
    conn = ctx.conn
    message_pks = _pks(ctx, s.messages)
    entity_pks = _pks(ctx, s.entities)
    unindex_messages(ctx, message_pks)
    unindex_entities(ctx, entity_pks)
    # Merged entities point at their target: unlink them before any entity goes.
    conn.execute(
        s.entities.update()
        .where(s.entities.c.workspace == ctx.workspace)
        .values(merged_into_pk=None)
    )
    for table in _workspace_tables():
        conn.execute(delete(table).where(table.c.workspace == ctx.workspace))
    ctx.store.drop_graph(ctx.workspace)
