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
from .cypher_run import SUPPORTED, Projection, answer, build_graph
from .cypher_text import Statement, label_key
from .rows import loads

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

#: The label every entity node carries besides its type (as in Neo4j agent memory).
ENTITY_LABEL = "Entity"


def _flat(core: dict[str, Any], properties: str | None) -> dict[str, Any]:
    """Stored ``properties`` become top-level properties, as in Neo4j; the columns win a
    clash so ``n.id`` and ``n.type`` always mean what the engine says. (Most rows hold
    ``{}``: skipping the JSON parser for them is a third of the projection's time.)"""
    if not properties or properties == "{}":
        return core
    extra = loads(properties)
    return {**{k: v for k, v in extra.items() if not k.startswith("__")}, **core}


#: Columns that become node / edge properties under their own names.
NODE_COLUMNS = (
    "id",
    "name",
    "type",
    "description",
    "confidence",
    "user_score",
    "confirmed",
    "source_stage",
    "created_at",
    "updated_at",
)
EDGE_COLUMNS = ("id", "type", "confidence", "created_at")


def load_projection(ctx: Ctx) -> Projection:
    """The workspace's live entities and their relationships, as ``build_graph`` wants them.

    Plain tuples and bulk inserts: per-row attribute access and per-node calls were most
    of the time of reading a thousand entities."""
    e, r = s.entities, s.relationships
    entity = label_key(ENTITY_LABEL)
    id_by_pk: dict[int, str] = {}
    nodes: list[tuple[str, dict[str, Any]]] = []
    for pk, properties, *values in ctx.conn.execute(
        select(e.c.pk, e.c.properties, *(e.c[name] for name in NODE_COLUMNS)).where(
            e.c.workspace == ctx.workspace, e.c.merged_into_pk.is_(None)
        )
    ):
        core = dict(zip(NODE_COLUMNS, values, strict=True))
        core["__labels__"] = {entity, label_key(core["type"])}
        if core["confirmed"] is not None:
            core["confirmed"] = bool(core["confirmed"])
        id_by_pk[pk] = core["id"]
        nodes.append((core["id"], _flat(core, properties)))
    edges: list[tuple[str, str, str, dict[str, Any]]] = []
    for source_pk, target_pk, properties, *values in ctx.conn.execute(
        select(
            r.c.source_pk, r.c.target_pk, r.c.properties, *(r.c[name] for name in EDGE_COLUMNS)
        ).where(r.c.workspace == ctx.workspace)
    ):
        source, target = id_by_pk.get(source_pk), id_by_pk.get(target_pk)
        if source is not None and target is not None:
            core = dict(zip(EDGE_COLUMNS, values, strict=True))
            core["__labels__"] = {label_key(core["type"])}
            edges.append((source, target, core["id"], _flat(core, properties)))
    return nodes, edges


def load_graph(ctx: Ctx) -> Any:
    """The workspace's entity graph, read and built in one go (``benchmarks``)."""
    return build_graph(load_projection(ctx))


def run_statement(graph: Any, statement: Statement) -> QueryResult:
    """Run a prepared read on a projected graph, in this process (``benchmarks``; the
    engine runs queries in a worker, ``cypher_pool.py``)."""
    columns, rows = answer(graph, statement)
    return QueryResult(columns=columns, rows=rows)
