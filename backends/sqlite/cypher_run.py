"""The interpreter's side of read-only Cypher: a projection becomes a graph, a prepared
statement becomes columns and rows.

This module is what a Cypher worker process (``cypher_worker.py``) imports, so it needs
nothing of the engine: no SQL, no models, only grand-cypher, networkx and the statement
``cypher_text.prepare`` wrote. Answers are plain ``(columns, rows)``; rows are JSON values.
"""

from __future__ import annotations

import json
import math
from typing import Any

import networkx as nx
from grandcypher import GrandCypher
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from nams_local.errors import InvalidInputError

from .cypher_text import Statement, label_key

__all__ = [
    "EDGE_COLUMNS",
    "ENTITY_LABEL",
    "NODE_COLUMNS",
    "SUPPORTED",
    "Answer",
    "Projection",
    "answer",
    "build_graph",
]

#: What this engine understands, quoted in every "unsupported" message.
SUPPORTED = (
    "supported: MATCH patterns with labels, directed relationship types and "
    "{property: value} maps, WHERE (=, <>, <, >, IN, CONTAINS, STARTS WITH, ENDS WITH, "
    "IS NULL, AND, OR, NOT), "
    "RETURN [DISTINCT] with AS, count/sum/avg/min/max/collect, ORDER BY, SKIP, LIMIT, $params"
)


#: The label every entity node carries besides its type (as in Neo4j agent memory).
ENTITY_LABEL = "Entity"

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
EDGE_COLUMNS = (
    "id",
    "type",
    "confidence",
    "created_at",
    # Validity in time (``validity.py``); ``current`` is derived from ``valid_until``.
    "valid_from",
    "valid_until",
    "superseded_by",
    "invalidated_at",
    "source_message_id",
)

#: A workspace's entity graph as raw rows (``cypher.load_projection``): per entity
#: ``(pk, properties JSON, *NODE_COLUMNS)``, per relationship
#: ``(source pk, target pk, properties JSON, *EDGE_COLUMNS)``.
Projection = tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]


def _flat(core: dict[str, Any], properties: str | None) -> dict[str, Any]:
    """Stored ``properties`` become top-level properties, as in Neo4j; the columns win a
    clash so ``n.id`` and ``n.type`` always mean what the engine says. (Most rows hold
    ``{}``: skipping the JSON parser for them is a third of the projection's time.)"""
    if not properties or properties == "{}":
        return core
    extra = json.loads(properties)
    return {**{k: v for k, v in extra.items() if not k.startswith("__")}, **core}


def _over_nothing(aggregate: str | None) -> Any:
    """An aggregate's value over no rows, as Neo4j answers it."""
    if aggregate == "COLLECT":
        return []
    return 0 if aggregate in ("COUNT", "SUM") else None


def build_graph(projection: Projection) -> Any:
    """A projection as a grand-cypher host graph (a ``MultiDiGraph``): every entity a node
    labelled ``Entity`` and with its type, every relationship an edge typed with its type.

    Plain tuples and bulk inserts: per-row attribute access and per-node calls were most
    of the time of building a thousand entities."""
    node_rows, edge_rows = projection
    entity = label_key(ENTITY_LABEL)
    id_by_pk: dict[int, str] = {}
    nodes: list[tuple[str, dict[str, Any]]] = []
    for pk, properties, *values in node_rows:
        core = dict(zip(NODE_COLUMNS, values, strict=True))
        core["__labels__"] = {entity, label_key(core["type"])}
        if core["confirmed"] is not None:
            core["confirmed"] = bool(core["confirmed"])
        id_by_pk[pk] = core["id"]
        nodes.append((core["id"], _flat(core, properties)))
    edges: list[tuple[str, str, str, dict[str, Any]]] = []
    for source_pk, target_pk, properties, *values in edge_rows:
        source, target = id_by_pk.get(source_pk), id_by_pk.get(target_pk)
        if source is not None and target is not None:
            core = dict(zip(EDGE_COLUMNS, values, strict=True))
            core["current"] = core["valid_until"] is None
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


#: Column names and rows (each row keyed by column name).
Answer = tuple[list[str], list[dict[str, Any]]]


def answer(graph: Any, statement: Statement) -> Answer:
    """Run a prepared read on a projected graph; any failure inside grand-cypher is the
    query's fault (the graph is well-formed), so it is an ``InvalidInputError``."""
    try:
        found = GrandCypher(graph).run(statement.text)
    except UnexpectedInput as exc:
        raise _syntax_error(exc) from exc
    except MemoryError:
        raise  # the worker's memory limit, not the query's syntax
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
    return [c.name for c in statement.columns], rows
