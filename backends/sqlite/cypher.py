"""Read-only Cypher over one workspace's whole memory graph, interpreted by kglite.

The local engine has no graph database, so a query runs on a projection of the
workspace's tables into the memory model as the Neo4j agent-memory schema names it:
conversations, messages, entities with their relationships and mentions, reasoning steps
and tool calls (``cypher_run.py`` builds it; ``docs/cypher.md`` lists labels, types and
properties). Merged (inert) entities are left out, as everywhere else in the API, and with
them the ``SAME_AS`` edge their merge recorded (``docs/cypher.md`` says why).

This module reads the rows (``load_projection``, one read transaction) together with the
workspace's graph version (``cypher_generations.py``); a Cypher worker process
(``cypher_pool.py``) builds the graph and keeps it for the next query of the same version,
so the tables are read again only after a write.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import Select, Table, select

from nams_local.models import QueryResult

from . import schema as s
from .cypher_generations import generation
from .cypher_run import Projection, answer, build_graph
from .cypher_text import Statement

if TYPE_CHECKING:  # the store imports the Cypher pool, which imports this module
    from .store import Ctx

__all__ = [
    "Projection",
    "build_graph",
    "current_generation",
    "load_graph",
    "load_projection",
    "run_statement",
]


def current_generation(ctx: Ctx) -> int:
    """The workspace's graph version now (a cached graph of this version is current)."""
    return generation(ctx.conn, ctx.workspace)


#: The columns read per table, in ``cypher_run.Projection``'s order.
_ENTITY: tuple[str, ...] = (
    *("pk", "id", "name", "type", "description", "properties", "confidence"),
    *("user_score", "confirmed", "source_stage", "created_at", "updated_at", "merged_into_pk"),
)
_RELATIONSHIP: tuple[str, ...] = (
    *("source_pk", "target_pk", "id", "type", "properties", "confidence", "created_at"),
    # Validity in time (``validity.py``); the graph derives ``current`` from valid_until.
    *("valid_from", "valid_until", "superseded_by", "invalidated_at", "source_message_id"),
)
_CONVERSATION: tuple[str, ...] = (
    *("pk", "id", "user_id", "metadata", "message_count", "created_at", "updated_at"),
)
_MESSAGE: tuple[str, ...] = (
    *("pk", "id", "conversation_pk", "role", "content", "metadata", "token_count"),
    "created_at",
)
_STEP: tuple[str, ...] = (
    *("pk", "id", "conversation_pk", "reasoning", "action_taken", "result", "created_at"),
)
_TOOL_CALL: tuple[str, ...] = (
    *("id", "step_pk", "tool_name", "input", "output", "status", "duration_ms", "created_at"),
)


def _columns(table: Table, names: tuple[str, ...]) -> Select[Any]:
    return select(*(table.c[name] for name in names))


def load_projection(ctx: Ctx) -> tuple[int, Projection]:
    """The workspace's memory graph as raw rows, and the version they are of (read in one
    transaction, so the rows are exactly that version). Messages and steps are found
    through their conversation (the indexed path)."""
    conn, ws = ctx.conn, ctx.workspace
    e, r, c, m = s.entities, s.relationships, s.conversations, s.messages
    st, tc, mn = s.steps, s.tool_calls, s.entity_mentions

    def rows(query: Select[Any]) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in conn.execute(query)]

    version = generation(conn, ws)
    projection = Projection(
        entities=rows(
            _columns(e, _ENTITY).where(e.c.workspace == ws, e.c.merged_into_pk.is_(None))
        ),
        relationships=rows(_columns(r, _RELATIONSHIP).where(r.c.workspace == ws)),
        conversations=rows(_columns(c, _CONVERSATION).where(c.c.workspace == ws)),
        messages=rows(
            _columns(m, _MESSAGE)
            .join(c, c.c.pk == m.c.conversation_pk)
            .where(c.c.workspace == ws)
            .order_by(m.c.conversation_pk, m.c.pk)
        ),
        mentions=rows(
            select(mn.c.message_pk, mn.c.entity_pk)
            .join(e, e.c.pk == mn.c.entity_pk)
            .where(e.c.workspace == ws)
        ),
        steps=rows(
            _columns(st, _STEP)
            .join(c, c.c.pk == st.c.conversation_pk)
            .where(c.c.workspace == ws)
            .order_by(st.c.conversation_pk, st.c.pk)
        ),
        tool_calls=rows(_columns(tc, _TOOL_CALL).where(tc.c.workspace == ws)),
    )
    return version, projection


def load_graph(ctx: Ctx) -> Any:
    """The workspace's memory graph, read and built in one go (``benchmarks``)."""
    return build_graph(load_projection(ctx)[1])


def run_statement(graph: Any, statement: Statement, *, max_rows: int = 10_000) -> QueryResult:
    """Run a prepared read on a projected graph, in this process (``benchmarks``; the
    engine runs queries in a worker, ``cypher_pool.py``)."""
    columns, rows = answer(graph, statement, timeout_ms=0, row_limit=max_rows)
    return QueryResult(columns=columns, rows=rows)
