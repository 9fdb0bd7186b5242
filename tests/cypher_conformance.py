"""The Cypher conformance table: one seeded memory graph (conversations, messages,
extracted entities with their mentions, explicit entities and relationships, reasoning
steps, tool calls) and the read queries people commonly write against it, each with the
exact rows it must answer (``docs/cypher.md`` lists the projection).

Shared by the engine test (``tests/backends/sqlite/test_cypher_conformance.py``) and the
HTTP test (``tests/server/test_cypher_conformance_http.py``); the seed is written through
the ``MemoryBackend`` protocol, so it fills the engine directly or a server through the
hosted client.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nams_local.backend import MemoryBackend

__all__ = ["CASES", "Case", "seed"]


@dataclass(frozen=True)
class Case:
    """A read query, its parameters and its answer; ``ordered=False`` compares the rows
    as a multiset (Cypher leaves their order open without ORDER BY)."""

    id: str
    cypher: str
    rows: list[dict[str, Any]]
    params: dict[str, Any] = field(default_factory=dict)
    ordered: bool = True


async def seed(backend: MemoryBackend) -> dict[str, str]:
    """The seeded graph; returns ids by name. Extraction runs on the first message (the
    rule extractor finds Ada Lovelace, Acme and London, and Ada WORKS_AT Acme)."""
    work = await backend.create_conversation("u1", {"topic": "work"})
    chat = await backend.create_conversation("u2")
    first = await backend.add_message(work.id, "user", "Ada Lovelace works at Acme in London.")
    second = await backend.add_message(work.id, "assistant", "Noted.")
    third = await backend.add_message(work.id, "user", "thanks")
    other = await backend.add_message(chat.id, "user", "hello there")
    ada = await backend.get_entity_by_name("Ada Lovelace")
    acme = await backend.get_entity_by_name("Acme")
    assert ada is not None and acme is not None
    alan = await backend.add_entity("Alan Turing", "person", "Computer scientist", {"born": "1912"})
    await backend.add_relationship(ada.id, alan.id, "KNOWS", {"since": "1840s"}, 0.3)
    await backend.add_relationship(alan.id, acme.id, "advises", None, 0.6)
    look = await backend.record_step(work.id, "look up Ada", "search", "found her")
    summary = await backend.record_step(work.id, "summarise", "write")
    search = await backend.record_tool_call("search", '{"q": "Ada"}', "ok", "success", look.id, 12)
    calc = await backend.record_tool_call("calc", "{}", None, "error", None, 3)
    return {
        "work": work.id,
        "chat": chat.id,
        "first": first.id,
        "second": second.id,
        "third": third.id,
        "other": other.id,
        "ada": ada.id,
        "acme": acme.id,
        "alan": alan.id,
        "look": look.id,
        "summary": summary.id,
        "search": search.id,
        "calc": calc.id,
    }


CASES = [
    # -- the memory model's labels and relationship types --------------------------------
    Case("count-conversations", "MATCH (c:Conversation) RETURN count(c) AS n", [{"n": 2}]),
    Case("count-messages", "MATCH (m:Message) RETURN count(*) AS n", [{"n": 4}]),
    Case("count-entities", "MATCH (e:Entity) RETURN count(e) AS n", [{"n": 4}]),
    Case("count-steps", "MATCH (s:ReasoningStep) RETURN count(s) AS n", [{"n": 2}]),
    Case("count-tool-calls", "MATCH (t:ToolCall) RETURN count(t) AS n", [{"n": 2}]),
    Case("count-everything", "MATCH (n) RETURN count(n) AS n", [{"n": 14}]),
    Case(
        "labels-histogram",
        "MATCH (n) RETURN labels(n)[0] AS label, count(*) AS n ORDER BY label",
        [
            {"label": "Conversation", "n": 2},
            {"label": "Entity", "n": 4},
            {"label": "Message", "n": 4},
            {"label": "ReasoningStep", "n": 2},
            {"label": "ToolCall", "n": 2},
        ],
    ),
    Case(
        "relationship-types",
        "MATCH ()-[r]->() RETURN type(r) AS t, count(*) AS n ORDER BY t",
        [
            {"t": "ADVISES", "n": 1},
            {"t": "FIRST_MESSAGE", "n": 2},
            {"t": "HAS_MESSAGE", "n": 4},
            {"t": "HAS_STEP", "n": 2},
            {"t": "KNOWS", "n": 1},
            {"t": "MENTIONS", "n": 3},
            {"t": "NEXT_MESSAGE", "n": 2},
            {"t": "USES_TOOL", "n": 1},
            {"t": "WORKS_AT", "n": 1},
        ],
    ),
    Case(
        "entity-type-labels",
        "MATCH (e:Entity) RETURN e.name AS name, labels(e) AS labels ORDER BY name",
        [
            {"name": "Acme", "labels": ["Entity", "ORGANIZATION"]},
            {"name": "Ada Lovelace", "labels": ["Entity", "PERSON"]},
            {"name": "Alan Turing", "labels": ["Entity", "PERSON"]},
            {"name": "London", "labels": ["Entity", "LOCATION"]},
        ],
    ),
    Case(
        "label-any-case",
        "MATCH (p:person) MATCH (c:conversation {user_id: 'u2'}) RETURN p.name, c.user_id "
        "ORDER BY p.name",
        [
            {"p.name": "Ada Lovelace", "c.user_id": "u2"},
            {"p.name": "Alan Turing", "c.user_id": "u2"},
        ],
    ),
    Case(
        "two-labels",
        "MATCH (e:Entity:Person) RETURN collect(e.name) AS names",
        [{"names": ["Ada Lovelace", "Alan Turing"]}],
        ordered=False,
    ),
    Case(
        "label-test-in-where",
        "MATCH (n) WHERE n:Location OR n:Organization RETURN n.name ORDER BY n.name",
        [{"n.name": "Acme"}, {"n.name": "London"}],
    ),
    Case(
        "label-test-in-a-list-comprehension",
        "MATCH p = (:conversation)-[:HAS_MESSAGE]->(m)-[:mentions]->(e:location) "
        "RETURN [n IN nodes(p) WHERE n:Message OR n:Location | n.role] AS found",
        [{"found": ["user", None]}],
    ),
    # -- parameters and literals --------------------------------------------------------
    Case(
        "return-parameter",
        "MATCH (n) RETURN $label AS label LIMIT 1",
        [{"label": "memory"}],
        {"label": "memory"},
    ),
    Case(
        "return-literals",
        "RETURN 1 AS one, 'two' AS two, [1, 2.5, null] AS list, {a: true} AS map",
        [{"one": 1, "two": "two", "list": [1, 2.5, None], "map": {"a": True}}],
    ),
    Case(
        "parameter-map",
        "RETURN $m.k AS k, $m AS m",
        [{"k": [1], "m": {"k": [1]}}],
        {"m": {"k": [1]}},
    ),
    Case(
        "parameter-in-pattern",
        "MATCH (c:Conversation {user_id: $user})-[:HAS_MESSAGE]->(m) RETURN count(m) AS n",
        [{"n": 3}],
        {"user": "u1"},
    ),
    Case(
        "parameter-list-in",
        "MATCH (e:Entity) WHERE e.name IN $names RETURN e.name ORDER BY e.name",
        [{"e.name": "Acme"}, {"e.name": "London"}],
        {"names": ["London", "Acme", "Nowhere"]},
    ),
    Case(
        "parameter-limit",
        "MATCH (m:Message) RETURN m.content ORDER BY m.content SKIP $skip LIMIT $limit",
        [{"m.content": "Noted."}, {"m.content": "hello there"}],
        {"skip": 1, "limit": 2},
    ),
    Case(
        "parameter-never-query-text",
        "MATCH (e {name: $n}) RETURN count(e) AS n",
        [{"n": 0}],
        {"n": "x'}) DETACH DELETE (e) //"},
    ),
    # -- conversations and messages -----------------------------------------------------
    Case(
        "messages-of-a-conversation",
        "MATCH (c:Conversation {id: $id})-[:HAS_MESSAGE]->(m:Message) "
        "RETURN m.role AS role, m.content AS content ORDER BY m.timestamp",
        [
            {"role": "user", "content": "Ada Lovelace works at Acme in London."},
            {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": "thanks"},
        ],
        {"id": "$work"},
    ),
    Case(
        "message-chain",
        "MATCH (c:Conversation {id: $id})-[:FIRST_MESSAGE]->(f) "
        "MATCH (f)-[:NEXT_MESSAGE*0..5]->(m) RETURN m.content AS content",
        [
            {"content": "Ada Lovelace works at Acme in London."},
            {"content": "Noted."},
            {"content": "thanks"},
        ],
        {"id": "$work"},
        ordered=False,
    ),
    Case(
        "last-message",
        "MATCH (c:Conversation {id: $id})-[:HAS_MESSAGE]->(m) "
        "WHERE NOT (m)-[:NEXT_MESSAGE]->() RETURN m.content",
        [{"m.content": "thanks"}],
        {"id": "$work"},
    ),
    Case(
        "messages-per-conversation",
        "MATCH (c:Conversation)-[:HAS_MESSAGE]->(m) "
        "RETURN c.user_id AS user, count(m) AS messages, c.message_count AS stored ORDER BY user",
        [{"user": "u1", "messages": 3, "stored": 3}, {"user": "u2", "messages": 1, "stored": 1}],
    ),
    Case(
        "roles-distinct",
        "MATCH (m:Message) RETURN DISTINCT m.role AS role ORDER BY role",
        [{"role": "assistant"}, {"role": "user"}],
    ),
    Case(
        "contains-and-starts-with",
        "MATCH (m:Message) WHERE m.content CONTAINS 'Acme' OR m.content STARTS WITH 'hel' "
        "RETURN m.content ORDER BY m.content",
        [{"m.content": "Ada Lovelace works at Acme in London."}, {"m.content": "hello there"}],
    ),
    Case(
        "message-has-no-name",
        "MATCH (m:Message {id: $id}) RETURN m.name AS name, m.role AS role",
        [{"name": None, "role": "assistant"}],
        {"id": "$second"},
    ),
    # -- entities, mentions, relationships ----------------------------------------------
    Case(
        "mentions-of-a-message",
        "MATCH (m:Message {id: $id})-[:MENTIONS]->(e:Entity) RETURN e.name ORDER BY e.name",
        [{"e.name": "Acme"}, {"e.name": "Ada Lovelace"}, {"e.name": "London"}],
        {"id": "$first"},
    ),
    Case(
        "conversation-to-entities",
        "MATCH (c:Conversation)-[:HAS_MESSAGE]->(:Message)-[:MENTIONS]->(e) "
        "RETURN c.user_id AS user, count(DISTINCT e) AS entities",
        [{"user": "u1", "entities": 3}],
    ),
    Case(
        "optional-match-mentions",
        "MATCH (e:Entity) OPTIONAL MATCH (m:Message)-[:MENTIONS]->(e) "
        "RETURN e.name AS name, count(m) AS mentions ORDER BY name",
        [
            {"name": "Acme", "mentions": 1},
            {"name": "Ada Lovelace", "mentions": 1},
            {"name": "Alan Turing", "mentions": 0},
            {"name": "London", "mentions": 1},
        ],
    ),
    Case(
        "relationship-properties",
        "MATCH (a:Entity)-[r:KNOWS]->(b:Entity) RETURN a.name, b.name, r.since, r.confidence",
        [
            {
                "a.name": "Ada Lovelace",
                "b.name": "Alan Turing",
                "r.since": "1840s",
                "r.confidence": 0.3,
            }
        ],
    ),
    Case(
        "relationship-type-any-case",
        "MATCH (a)-[:advises|works_at]->(o:Organization) RETURN a.name ORDER BY a.name",
        [{"a.name": "Ada Lovelace"}, {"a.name": "Alan Turing"}],
    ),
    Case(
        "undirected",
        "MATCH (a:Entity {name: 'Alan Turing'})-[r]-(b) RETURN b.name AS name, type(r) AS t "
        "ORDER BY name",
        [{"name": "Acme", "t": "ADVISES"}, {"name": "Ada Lovelace", "t": "KNOWS"}],
    ),
    Case(
        "variable-length",
        "MATCH (a:Entity {name: 'Ada Lovelace'})-[*1..2]->(b:Entity) "
        "RETURN DISTINCT b.name AS name ORDER BY name",
        [{"name": "Acme"}, {"name": "Alan Turing"}],
    ),
    Case(
        "path-length",
        "MATCH p = (a:Entity {name: 'Ada Lovelace'})-[:KNOWS|ADVISES*]->(o:Organization) "
        "RETURN length(p) AS hops, [n IN nodes(p) | n.name] AS names",
        [{"hops": 2, "names": ["Ada Lovelace", "Alan Turing", "Acme"]}],
    ),
    Case(
        "entity-properties",
        "MATCH (e:Entity {name: 'Alan Turing'}) RETURN e.born AS born, e.description AS d, "
        "e.type AS type, keys(e) = keys(properties(e)) AS same",
        [{"born": "1912", "d": "Computer scientist", "type": "person", "same": True}],
    ),
    Case(
        "properties-function",
        "MATCH (a)-[r:KNOWS]->() RETURN properties(r).since AS since",
        [{"since": "1840s"}],
    ),
    Case(
        "is-not-null",
        "MATCH (e:Entity) WHERE e.description IS NOT NULL RETURN e.name",
        [{"e.name": "Alan Turing"}],
    ),
    Case(
        "exists-subquery",
        "MATCH (e:Entity) WHERE EXISTS { MATCH (e)-[:WORKS_AT]->() } RETURN e.name",
        [{"e.name": "Ada Lovelace"}],
    ),
    # -- aggregation, WITH, paging ------------------------------------------------------
    Case(
        "with-then-filter",
        "MATCH (e:Entity) WITH e.type AS type, count(*) AS n WHERE n > 1 RETURN type, n",
        [{"type": "person", "n": 2}],
    ),
    Case(
        "collect-then-size",
        "MATCH (c:Conversation)-[:HAS_MESSAGE]->(m) WITH c, collect(m.role) AS roles "
        "RETURN c.user_id AS user, size(roles) AS n ORDER BY n DESC",
        [{"user": "u1", "n": 3}, {"user": "u2", "n": 1}],
    ),
    Case(
        "order-skip-limit",
        "MATCH (e:Entity) RETURN e.name ORDER BY e.name DESC SKIP 1 LIMIT 2",
        [{"e.name": "Alan Turing"}, {"e.name": "Ada Lovelace"}],
    ),
    Case(
        "aggregate-over-nothing",
        "MATCH (n:Nothing) RETURN count(n) AS n, collect(n.name) AS names, max(n.x) AS top",
        [{"n": 0, "names": [], "top": None}],
    ),
    Case(
        "aggregates",
        "MATCH (t:ToolCall) RETURN sum(t.duration_ms) AS total, avg(t.duration_ms) AS mean, "
        "min(t.tool_name) AS first, max(t.tool_name) AS last",
        [{"total": 15, "mean": 7.5, "first": "calc", "last": "search"}],
    ),
    Case(
        "unwind",
        "UNWIND $names AS name OPTIONAL MATCH (e:Entity {name: name}) "
        "RETURN name, e IS NOT NULL AS known",
        [{"name": "Acme", "known": True}, {"name": "Zed", "known": False}],
        {"names": ["Acme", "Zed"]},
    ),
    Case(
        "case-and-coalesce",
        "MATCH (s:ReasoningStep) RETURN s.step_number AS n, coalesce(s.result, '-') AS r, "
        "CASE WHEN s.result IS NULL THEN 'open' ELSE 'done' END AS state ORDER BY n",
        [{"n": 1, "r": "found her", "state": "done"}, {"n": 2, "r": "-", "state": "open"}],
    ),
    Case(
        "string-functions",
        "MATCH (e:Entity {name: 'Acme'}) RETURN toUpper(e.name) AS up, toLower(e.name) AS low, "
        "size(e.name) AS len, substring(e.name, 1, 2) AS mid",
        [{"up": "ACME", "low": "acme", "len": 4, "mid": "cm"}],
    ),
    # -- reasoning: steps and tool calls ------------------------------------------------
    Case(
        "steps-of-a-conversation",
        "MATCH (c:Conversation {id: $id})-[h:HAS_STEP]->(s:ReasoningStep) "
        "RETURN h.order AS n, s.thought AS thought, s.action AS action ORDER BY n",
        [
            {"n": 1, "thought": "look up Ada", "action": "search"},
            {"n": 2, "thought": "summarise", "action": "write"},
        ],
        {"id": "$work"},
    ),
    Case(
        "tool-calls-of-a-step",
        "MATCH (s:ReasoningStep)-[:USES_TOOL]->(t:ToolCall) "
        "RETURN s.reasoning AS step, t.tool_name AS tool, t.status AS status, t.duration_ms AS ms",
        [{"step": "look up Ada", "tool": "search", "status": "success", "ms": 12}],
    ),
    Case(
        "tool-call-without-a-step",
        "MATCH (t:ToolCall) WHERE NOT ()-[:USES_TOOL]->(t) RETURN t.tool_name, t.step_id",
        [{"t.tool_name": "calc", "t.step_id": None}],
    ),
    Case(
        "trace-as-agent-memory-reads-it",
        "MATCH (c:Conversation {id: $id}) OPTIONAL MATCH (c)-[:HAS_STEP]->(s:ReasoningStep) "
        "OPTIONAL MATCH (s)-[:USES_TOOL]->(t:ToolCall) "
        "RETURN s.step_number AS n, collect(t.tool_name) AS tools ORDER BY n",
        [{"n": 1, "tools": ["search"]}, {"n": 2, "tools": []}],
        {"id": "$work"},
    ),
    # -- whole nodes and relationships --------------------------------------------------
    Case(
        "node-is-its-property-map",
        "MATCH (t:ToolCall {tool_name: 'calc'}) RETURN t {.tool_name, .status} AS t",
        [{"t": {"tool_name": "calc", "status": "error"}}],
    ),
    Case(
        "comments-and-keywords-in-strings",
        "MATCH (m:Message) /* CREATE */ WHERE m.content <> 'DELETE' // SET\nRETURN count(m) AS n",
        [{"n": 4}],
    ),
]
