"""Read-only Cypher over one workspace's entity graph, interpreted by grand-cypher.

The local engine has no Cypher database, so a query runs on a networkx projection of the
``entities`` and ``relationships`` tables: every live entity is a node labelled ``Entity``
and with its type (``label_key``), carrying its columns as properties; every relationship
is an edge typed with its type. Merged (inert) entities are left out, as everywhere else.

The projection is read from SQLite for each query rather than taken from the graph mirror
(``graph.py``): the mirror holds only what neighbourhood walks need, and a fresh read can
never be stale; it costs about 20 ms per thousand entities with two relationships each
(``python -m benchmarks cypher_latency``), the same order as interpreting a query. It is
read as plain rows (``Projection``), which a Cypher worker process (``cypher_pool.py``)
turns into the graph and runs the query over, within the time and memory limits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from nams_local.models import QueryResult

from . import schema as s
from .cypher_run import (
    EDGE_COLUMNS,
    ENTITY_LABEL,
    NODE_COLUMNS,
    SUPPORTED,
    Projection,
    answer,
    build_graph,
)
from .cypher_text import Statement

if TYPE_CHECKING:  # the store imports the Cypher pool, which imports this module
    from .store import Ctx

__all__ = [
    "ENTITY_LABEL",
    "SUPPORTED",
    "Projection",
    "build_graph",
    "load_graph",
    "load_projection",
    "run_statement",
]


def load_projection(ctx: Ctx) -> Projection:
    """The workspace's live entities and their relationships as raw rows, for
    ``cypher_run.build_graph`` (in a worker process: turning rows into property maps is
    most of a projection's CPU, and raw tuples pickle several times faster than maps)."""
    e, r = s.entities, s.relationships
    nodes = [
        tuple(row)
        for row in ctx.conn.execute(
            select(e.c.pk, e.c.properties, *(e.c[name] for name in NODE_COLUMNS)).where(
                e.c.workspace == ctx.workspace, e.c.merged_into_pk.is_(None)
            )
        )
    ]
    edges = [
        tuple(row)
        for row in ctx.conn.execute(
            select(
                r.c.source_pk,
                r.c.target_pk,
                r.c.properties,
                *(r.c[name] for name in EDGE_COLUMNS),
            ).where(r.c.workspace == ctx.workspace)
        )
    ]
    return nodes, edges


def load_graph(ctx: Ctx) -> Any:
    """The workspace's entity graph, read and built in one go (``benchmarks``)."""
    return build_graph(load_projection(ctx))


def run_statement(graph: Any, statement: Statement) -> QueryResult:
    """Run a prepared read on a projected graph, in this process (``benchmarks``; the
    engine runs queries in a worker, ``cypher_pool.py``)."""
    columns, rows = answer(graph, statement)
    return QueryResult(columns=columns, rows=rows)
