"""Read-only Cypher over one workspace's entity graph, interpreted by grand-cypher.

The local engine has no Cypher database, so a query runs on a networkx projection of the
``entities`` and ``relationships`` tables: every live entity is a node labelled ``Entity``
and with its type (``label_key``), carrying its columns as properties; every relationship
is an edge typed with its type. Merged (inert) entities are left out, as everywhere else.

The projection is read from SQLite for each query rather than taken from the graph mirror
(``graph.py``): the mirror holds only what neighbourhood walks need, and a fresh read can
never be stale; it costs about 20 ms per thousand entities with two relationships each
(``python -m benchmarks cypher_latency``), the same order as interpreting a query. The
query itself then runs off the database thread.
"""

from __future__ import annotations

import json
import math
from typing import Any

import networkx as nx
from grandcypher import GrandCypher
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from sqlalchemy import select

from nams_local.errors import InvalidInputError
from nams_local.models import QueryResult

from . import schema as s
from .cypher_text import Statement, label_key
from .rows import loads
from .store import Ctx

__all__ = ["ENTITY_LABEL", "SUPPORTED", "load_graph", "run_statement"]

#: The label every entity node carries besides its type (as in Neo4j agent memory).
ENTITY_LABEL = "Entity"

#: What this engine understands, quoted in every "unsupported" message.
SUPPORTED = (
    "supported: MATCH patterns with labels, directed relationship types and "
    "{property: value} maps, WHERE (=, <>, <, >, IN, CONTAINS, STARTS WITH, ENDS WITH, "
    "IS NULL, AND, OR, NOT), "
    "RETURN [DISTINCT] with AS, count/sum/avg/min/max/collect, ORDER BY, SKIP, LIMIT, $params"
)


def _over_nothing(aggregate: str | None) -> Any:
    """An aggregate's value over no rows, as Neo4j answers it."""
    if aggregate == "COLLECT":
        return []
    return 0 if aggregate in ("COUNT", "SUM") else None


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


def load_graph(ctx: Ctx) -> Any:
    """The workspace's entity graph as a grand-cypher host graph (a ``MultiDiGraph``).

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
    graph = nx.MultiDiGraph()
    graph.add_nodes_from(nodes)
    graph.add_edges_from(edges)
    return graph


def _value(value: Any) -> Any:
    """A grand-cypher value as JSON: nodes and edges as their property maps (without the
    engine's ``__labels__``), sets as sorted lists, non-finite numbers as null."""
    if isinstance(value, dict):
        return {str(k): _value(v) for k, v in value.items() if not str(k).startswith("__")}
    if isinstance(value, set | frozenset):
        return sorted((_value(v) for v in value), key=str)
    if isinstance(value, list | tuple):
        return [_value(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, str | int | float):
        return value
    return str(value)


def _syntax_error(exc: UnexpectedInput) -> InvalidInputError:
    if isinstance(exc, UnexpectedEOF):
        near = "the end of the query"
    elif isinstance(exc, UnexpectedToken):
        near = repr(str(exc.token))
    elif isinstance(exc, UnexpectedCharacters):
        near = repr(exc.char)
    else:
        near = "an unexpected token"
    return InvalidInputError(f"Cypher syntax error or unsupported syntax near {near}; {SUPPORTED}")


def _distinct(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first of each set of equal rows, in order (rows are JSON values by now)."""
    seen: set[str] = set()
    kept = []
    for row in rows:
        key = json.dumps(row, sort_keys=True)
        if key not in seen:
            seen.add(key)
            kept.append(row)
    return kept


def run_statement(graph: Any, statement: Statement) -> QueryResult:
    """Run a prepared read on a projected graph; any failure inside grand-cypher is the
    query's fault (the graph is well-formed), so it is an ``InvalidInputError``."""
    try:
        found = GrandCypher(graph).run(statement.text)
    except UnexpectedInput as exc:
        raise _syntax_error(exc) from exc
    except Exception as exc:  # grand-cypher signals unsupported shapes with many types
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InvalidInputError(f"unsupported Cypher: {detail}; {SUPPORTED}") from exc
    by_key = {str(k): v for k, v in found.items()}
    missing = [c.name for c in statement.columns if c.key not in by_key]
    if missing:
        raise InvalidInputError(f"unsupported RETURN item(s): {', '.join(missing)}; {SUPPORTED}")
    count = min((len(by_key[c.key]) for c in statement.columns), default=0)
    rows = [{c.name: _value(by_key[c.key][i]) for c in statement.columns} for i in range(count)]
    if not rows and all(c.aggregate for c in statement.columns):
        # Aggregates alone answer one row even over nothing: count 0, collect [], max null.
        rows = [{c.name: _over_nothing(c.aggregate) for c in statement.columns}]
    if statement.distinct:
        rows = _distinct(rows)
    # Paging the finished rows: Cypher's SKIP/LIMIT come after aggregation and DISTINCT.
    rows = rows[statement.skip :]
    rows = rows if statement.limit is None else rows[: statement.limit]
    return QueryResult(columns=[c.name for c in statement.columns], rows=rows)
