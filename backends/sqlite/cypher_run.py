"""The interpreter's side of read-only Cypher: a projection becomes a kglite graph, a
prepared statement becomes columns and rows.

This module is what a Cypher worker process (``cypher_worker.py``) imports, so it needs
nothing of the engine: no SQL, no models, only kglite and the statement ``cypher_text``
prepared. Answers are plain ``(columns, rows)``; rows are JSON values.

The graph is the memory model as the Neo4j agent-memory schema names it (``docs/cypher.md``):

* ``(:Conversation)-[:HAS_MESSAGE]->(:Message)``, ``(:Conversation)-[:FIRST_MESSAGE]->``
  its first message, ``(:Message)-[:NEXT_MESSAGE]->(:Message)`` in order;
* ``(:Entity:<TYPE>)`` with the entity relationships typed by their type (a ``SAME_AS``
  edge only where one links two live entities: ``cypher.py`` leaves merged ones out),
  ``(:Message)-[:MENTIONS]->(:Entity)``;
* ``(:Conversation)-[:HAS_STEP {order}]->(:ReasoningStep)-[:USES_TOOL]->(:ToolCall)``.

kglite infers one type per property column when it loads records in bulk (a column holding
``1840`` and ``"long ago"`` would become text), so bulk loading is used for the engine's
own columns, whose types are fixed, and the free-form stored properties of entities and
relationships are set afterwards by a parameterised Cypher ``SET``, value by value.
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from collections.abc import Iterable
from typing import Any, NamedTuple

import kglite

from nams_local.errors import InvalidInputError

from .cypher_text import Statement, canonical_label, label_key
from .stored_json import loads

__all__ = ["Answer", "Projection", "QueryTimeout", "answer", "build_graph"]


class Projection(NamedTuple):
    """A workspace's memory graph as raw rows (``cypher.load_projection``); raw tuples
    pickle several times faster than maps on their way to a worker."""

    #: ``(pk, id, name, type, description, properties, confidence, user_score,
    #: confirmed, source_stage, created_at, updated_at, merged_into_pk)``
    entities: list[tuple[Any, ...]]
    #: ``(source_pk, target_pk, id, type, properties, confidence, created_at, valid_from,
    #: valid_until, superseded_by, invalidated_at, source_message_id)``
    relationships: list[tuple[Any, ...]]
    #: ``(pk, id, user_id, metadata, message_count, created_at, updated_at)``
    conversations: list[tuple[Any, ...]]
    #: ``(pk, id, conversation_pk, role, content, metadata, token_count, created_at)``,
    #: in conversation order
    messages: list[tuple[Any, ...]]
    #: ``(message_pk, entity_pk)``
    mentions: list[tuple[Any, ...]]
    #: ``(pk, id, conversation_pk, reasoning, action_taken, result, created_at)``, in order
    steps: list[tuple[Any, ...]]
    #: ``(id, step_pk, tool_name, input, output, status, duration_ms, created_at)``
    tool_calls: list[tuple[Any, ...]]


class QueryTimeout(Exception):
    """The engine's own deadline (the time limit) passed."""


#: Column names and rows (each row keyed by column name).
Answer = tuple[list[str], list[dict[str, Any]]]

_SOURCE, _TARGET = "_nams_source", "_nams_target"

# kglite prints query advisories ("unknown label") on stderr by default: the server's log is
# no place for them (they stay in each result's diagnostics).
kglite.set_query_warning_policy("silent")


def _stored(properties: str | None) -> dict[str, Any]:
    """Stored ``properties`` (JSON text), without engine-private ``__`` keys."""
    if not properties or properties == "{}":
        return {}
    extra = loads(properties)
    return {k: v for k, v in extra.items() if not k.startswith("__")}


_NO_TITLE = "_nams_title"


def _nodes(label: str, records: list[dict[str, Any]], title: str = _NO_TITLE) -> dict[str, Any]:
    """A node spec. kglite gives every node a title and answers ``n.name`` with it when
    the node has no ``name``: nodes without a name get a null title, so ``m.name`` of a
    message is null (as in Neo4j), not its id."""
    if title == _NO_TITLE:
        for record in records:
            record[_NO_TITLE] = None
    return {"type": label, "id_field": "id", "title_field": title, "records": records}


def _edges(kind: str, source: str, target: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "type": kind,
        "source_type": source,
        "source_id_field": _SOURCE,
        "target_type": target,
        "target_id_field": _TARGET,
        "records": records,
    }


def _entity_nodes(
    projection: Projection,
) -> tuple[dict[int, str], list[dict[str, Any]], dict[str, list[str]], list[dict[str, Any]]]:
    """Entity records, ids by pk, ids by type label, and the stored properties to set."""
    id_by_pk = {row[0]: row[1] for row in projection.entities}
    records, by_label, extra = [], defaultdict(list), []
    for _, id_, name, type_, description, properties, *rest in projection.entities:
        confidence, user_score, confirmed, source_stage, created, updated, merged = rest
        records.append(
            {
                "id": id_,
                "name": name,
                "type": type_,
                "description": description,
                "confidence": confidence,
                "user_score": user_score,
                "confirmed": None if confirmed is None else bool(confirmed),
                "source_stage": source_stage,
                "created_at": created,
                "updated_at": updated,
                "merged_into": id_by_pk.get(merged) if merged is not None else None,
            }
        )
        by_label[canonical_label(type_)].append(id_)
        stored = _stored(properties)
        if stored:
            extra.append({"id": id_, "p": stored})
    return id_by_pk, records, by_label, extra


def _relationship_edges(
    projection: Projection, id_by_pk: dict[int, str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Edge specs per relationship type, and the stored properties to set."""
    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    extra = []
    for (
        source_pk,
        target_pk,
        id_,
        type_,
        properties,
        confidence,
        created,
        valid_from,
        valid_until,
        superseded_by,
        invalidated_at,
        source_message_id,
    ) in projection.relationships:
        source, target = id_by_pk.get(source_pk), id_by_pk.get(target_pk)
        if source is None or target is None:
            continue
        kind = label_key(type_)
        by_type[kind].append(
            {
                _SOURCE: source,
                _TARGET: target,
                "id": id_,
                "type": type_,
                "confidence": confidence,
                "created_at": created,
                "valid_from": valid_from,
                "valid_until": valid_until,
                "current": valid_until is None,
                "superseded_by": superseded_by,
                "invalidated_at": invalidated_at,
                "source_message_id": source_message_id,
            }
        )
        stored = _stored(properties)
        if stored:
            extra.append({"id": id_, "kind": kind, "p": stored})
    specs = [_edges(kind, "Entity", "Entity", rows) for kind, rows in by_type.items()]
    return specs, extra


def _conversation_parts(
    projection: Projection, id_by_pk: dict[int, str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Node and edge specs of conversations, messages, steps and tool calls."""
    conversation_id = {row[0]: row[1] for row in projection.conversations}
    message_id = {row[0]: row[1] for row in projection.messages}
    step_id = {row[0]: row[1] for row in projection.steps}
    conversations = [
        {
            "id": id_,
            "user_id": user_id,
            "metadata": metadata,
            "message_count": count,
            "created_at": created,
            "updated_at": updated,
        }
        for _, id_, user_id, metadata, count, created, updated in projection.conversations
    ]
    messages, has_message, first, following = [], [], [], []
    last: dict[int, str] = {}
    for _, id_, conversation_pk, role, content, metadata, tokens, created in projection.messages:
        owner = conversation_id.get(conversation_pk)
        if owner is None:
            continue
        messages.append(
            {
                "id": id_,
                "conversation_id": owner,
                "role": role,
                "content": content,
                "metadata": metadata,
                "token_count": tokens,
                "created_at": created,
                "timestamp": created,
            }
        )
        has_message.append({_SOURCE: owner, _TARGET: id_})
        previous = last.get(conversation_pk)
        if previous is None:
            first.append({_SOURCE: owner, _TARGET: id_})
        else:
            following.append({_SOURCE: previous, _TARGET: id_})
        last[conversation_pk] = id_
    steps, has_step = [], []
    numbers: dict[int, int] = defaultdict(int)
    for _, id_, conversation_pk, reasoning, action, result, created in projection.steps:
        owner = conversation_id.get(conversation_pk)
        if owner is None:
            continue
        numbers[conversation_pk] += 1
        number = numbers[conversation_pk]
        steps.append(
            {
                "id": id_,
                "conversation_id": owner,
                "step_number": number,
                "reasoning": reasoning,
                "action_taken": action,
                "result": result,
                "thought": reasoning,
                "action": action,
                "observation": result,
                "created_at": created,
                "timestamp": created,
            }
        )
        has_step.append({_SOURCE: owner, _TARGET: id_, "order": number})
    tool_calls, uses_tool = [], []
    for id_, step_pk, tool, given, output, status, duration, created in projection.tool_calls:
        owner = step_id.get(step_pk) if step_pk is not None else None
        tool_calls.append(
            {
                "id": id_,
                "step_id": owner,
                "tool_name": tool,
                "input": given,
                "output": output,
                "arguments": given,
                "result": output,
                "status": status,
                "duration_ms": duration,
                "created_at": created,
                "timestamp": created,
            }
        )
        if owner is not None:
            uses_tool.append({_SOURCE: owner, _TARGET: id_})
    mentions = [
        {_SOURCE: message_id[m], _TARGET: id_by_pk[e]}
        for m, e in projection.mentions
        if m in message_id and e in id_by_pk
    ]
    nodes = [
        _nodes("Conversation", conversations),
        _nodes("Message", messages),
        _nodes("ReasoningStep", steps),
        _nodes("ToolCall", tool_calls),
    ]
    edges = [
        _edges("HAS_MESSAGE", "Conversation", "Message", has_message),
        _edges("FIRST_MESSAGE", "Conversation", "Message", first),
        _edges("NEXT_MESSAGE", "Message", "Message", following),
        _edges("MENTIONS", "Message", "Entity", mentions),
        _edges("HAS_STEP", "Conversation", "ReasoningStep", has_step),
        _edges("USES_TOOL", "ReasoningStep", "ToolCall", uses_tool),
    ]
    return nodes, edges


def _non_empty(specs: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [spec for spec in specs if spec["records"]]


def build_graph(projection: Projection) -> Any:
    """A projection as a read-only kglite graph (see the module docstring)."""
    id_by_pk, entities, by_label, entity_extra = _entity_nodes(projection)
    relationship_specs, relationship_extra = _relationship_edges(projection, id_by_pk)
    nodes, edges = _conversation_parts(projection, id_by_pk)
    spec = {
        "nodes": _non_empty([_nodes("Entity", entities, title="name"), *nodes]),
        "connections": _non_empty([*relationship_specs, *edges]),
    }
    merged = [
        {_SOURCE: record["id"], _TARGET: record["merged_into"]}
        for record in entities
        if record["merged_into"] is not None
    ]
    if merged:
        spec["connections"].append(_edges("SAME_AS", "Entity", "Entity", merged))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = kglite.from_records(spec, on_missing_endpoint="drop")
        for label, ids in by_label.items():
            if label != "Entity":
                graph.add_label("Entity", ids, label)
        if entity_extra:
            graph.cypher(
                "UNWIND $rows AS r MATCH (e:Entity {id: r.id}) SET e += r.p",
                params={"rows": entity_extra},
                timeout_ms=0,
            )
        for kind, rows in _grouped(relationship_extra).items():
            graph.cypher(
                f"UNWIND $rows AS r MATCH ()-[x:{kind}]->() WHERE x.id = r.id SET x += r.p",
                params={"rows": rows},
                timeout_ms=0,
            )
    graph.read_only(True)
    return graph


def _grouped(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        grouped[row["kind"]].append({"id": row["id"], "p": row["p"]})
    return grouped


_NODE_KEYS = frozenset({"id", "labels", "properties"})
_EDGE_KEYS = frozenset({"id", "start", "end", "type", "properties"})
_PATH_KEYS = frozenset({"nodes", "relationships"})


def _node(value: dict[str, Any]) -> dict[str, Any]:
    """A node as its property map, without kglite's virtual ``title`` (the name or id) and
    ``type`` (the primary label) keys: an entity's ``type`` is its own stored type."""
    properties = dict(value["properties"])
    labels = value["labels"]
    if "title" in properties and properties["title"] in (None, properties.get("name")):
        del properties["title"]
    if labels and labels[0] != "Entity" and properties.get("type") == labels[0]:
        del properties["type"]
    return {str(k): _value(v) for k, v in properties.items()}


def _value(value: Any) -> Any:
    """A kglite value as JSON: nodes and relationships as their property maps, a path as
    its nodes and relationships, non-finite numbers as null."""
    if isinstance(value, dict):
        keys = value.keys()
        if keys == _NODE_KEYS and isinstance(value["properties"], dict):
            return _node(value)
        if keys == _EDGE_KEYS and isinstance(value["properties"], dict):
            return {str(k): _value(v) for k, v in value["properties"].items()}
        if keys == _PATH_KEYS and isinstance(value["nodes"], list):
            return {
                "nodes": _value(value["nodes"]),
                "relationships": _value(value["relationships"]),
            }
        return {str(k): _value(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_value(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, str | int | float):
        return value
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def _cypher_message(message: str) -> str:
    """kglite's message, saying it is about the Cypher query."""
    return message if message.startswith("Cypher") else f"Cypher error: {message}"


def _message(exc: BaseException) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__


def _run(graph: Any, text: str, statement: Statement, timeout_ms: int, rows: int) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return graph.cypher(
            text,
            params=statement.params,
            timeout_ms=timeout_ms,
            row_limit=rows,
            hide_structural_keys=True,
        )


def answer(graph: Any, statement: Statement, *, timeout_ms: int, row_limit: int) -> Answer:
    """Run a prepared read on a projected graph, keeping at most ``row_limit`` rows.

    Any failure inside kglite is the query's fault (the graph is well-formed), so it is an
    ``InvalidInputError``; a syntax error is reported on the caller's own text."""
    try:
        found = _run(graph, statement.text, statement, timeout_ms, row_limit)
    except kglite.CypherTimeoutError as exc:
        raise QueryTimeout from exc
    except kglite.CypherSyntaxError as exc:
        raise InvalidInputError(_cypher_message(_caller_syntax(graph, statement, exc))) from exc
    except MemoryError:
        raise  # the worker's memory limit, not the query's fault
    except Exception as exc:  # kglite signals unsupported or failing reads with many types
        raise InvalidInputError(_cypher_message(_message(exc))) from exc
    if not isinstance(found, kglite.ResultView):  # ``RETURN ... FORMAT CSV``: a text
        raise InvalidInputError("FORMAT is not supported: a query answers rows of JSON values")
    columns = [str(c) for c in found.columns]
    return columns, [{c: _value(row.get(c)) for c in columns} for row in found.to_list()]


def _caller_syntax(graph: Any, statement: Statement, exc: BaseException) -> str:
    """The syntax error as kglite reports it on the caller's own text (labels spelled one
    way and decoded escapes never change whether a query parses, only its quoted text)."""
    if statement.text == statement.original:
        return _message(exc)
    try:
        _run(graph, statement.original, statement, 1, 0)
    except kglite.CypherSyntaxError as original:
        return _message(original)
    except Exception:
        pass
    return _message(exc).split("\n", 1)[0]
