"""One small entity graph and the read queries asked of it, shared by the engine tests
(``tests/backends/sqlite/test_cypher.py``) and the server tests
(``tests/server/test_query_route.py``).

The graph is written through the ``MemoryBackend`` protocol, so the same builder fills the
SQLite engine directly or through the server with the hosted client. It includes an entity
merged into Ada: inert entities must never show up in a query.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nams_local.backend import MemoryBackend

__all__ = ["BOBBY", "READS", "WRITES", "Read", "build_graph"]

#: An entity name full of quotes, a write keyword and a comment marker.
BOBBY = 'Robert\'); DROP TABLE entities; -- "the \\ one" 😀'


@dataclass(frozen=True)
class Read:
    """A read query with its parameters and the exact answer it must give."""

    id: str
    cypher: str
    columns: list[str]
    rows: list[dict[str, Any]]
    params: dict[str, Any] = field(default_factory=dict)


async def build_graph(backend: MemoryBackend) -> dict[str, str]:
    """People, employers and a city; returns the ids by name (``"alias"`` is the merged one)."""
    ada = await backend.add_entity("Ada", "person", "Mathematician", {"born": "1815"})
    alan = await backend.add_entity("Alan", "person", "Computer scientist")
    grace = await backend.add_entity("Grace", "Person")
    acme = await backend.add_entity("Acme", "organization")
    engines = await backend.add_entity("Analytical Engines Ltd", "organization")
    london = await backend.add_entity("London", "location")
    bobby = await backend.add_entity(BOBBY, "concept")
    alias = await backend.add_entity("A. Lovelace", "person")
    await backend.add_relationship(ada.id, acme.id, "WORKS_AT", {"since": 1840}, 0.9)
    await backend.add_relationship(alan.id, acme.id, "works_at", {"since": 1936}, 0.8)
    await backend.add_relationship(grace.id, engines.id, "WORKS_AT", {"since": 1944})
    await backend.add_relationship(ada.id, london.id, "LIVES_IN", None, 0.95)
    await backend.add_relationship(ada.id, alan.id, "KNOWS", None, 0.3)
    await backend.merge_entities(alias.id, ada.id)
    return {
        "ada": ada.id,
        "alan": alan.id,
        "grace": grace.id,
        "acme": acme.id,
        "engines": engines.id,
        "london": london.id,
        "bobby": bobby.id,
        "alias": alias.id,
    }


#: Representative reads. Labels and types are matched ignoring case (``Grace`` is a
#: ``Person``, Alan ``works_at``), and the merged "A. Lovelace" would sort first in 4. The
#: last two page aggregated rows: SKIP/LIMIT apply after aggregation, never to the matches
#: (the first is the TCK's ``cypher_query`` scenario).
READS = [
    Read(
        "label-where-order",
        "MATCH (p:Person) WHERE p.name <> 'Grace' RETURN p.name AS name, p.description "
        "ORDER BY name",
        ["name", "p.description"],
        [
            {"name": "Ada", "p.description": "Mathematician"},
            {"name": "Alan", "p.description": "Computer scientist"},
        ],
    ),
    Read(
        "relationship-type-aliases",
        "MATCH (p:person)-[w:works_at]->(o:ORGANIZATION)\n"
        "RETURN p.name AS person, o.name AS employer, w.since ORDER BY w.since",
        ["person", "employer", "w.since"],
        [
            {"person": "Ada", "employer": "Acme", "w.since": 1840},
            {"person": "Alan", "employer": "Acme", "w.since": 1936},
            {"person": "Grace", "employer": "Analytical Engines Ltd", "w.since": 1944},
        ],
    ),
    Read(
        "parameters",
        "MATCH (p:Entity {name: $name})-[r]->(x) WHERE r.confidence >= $min "
        "RETURN type(r) AS rel, x.name AS other ORDER BY rel",
        ["rel", "other"],
        [{"rel": "LIVES_IN", "other": "London"}, {"rel": "WORKS_AT", "other": "Acme"}],
        {"name": "Ada", "min": 0.5},
    ),
    Read(
        "skip-limit",
        "MATCH (e:Entity) RETURN e.name ORDER BY e.name SKIP 1 LIMIT 3",
        ["e.name"],
        [{"e.name": "Ada"}, {"e.name": "Alan"}, {"e.name": "Analytical Engines Ltd"}],
    ),
    Read(
        "count",
        "MATCH (p:Person)-[:WORKS_AT]->(o:Organization) "
        "RETURN o.name AS employer, count(*) AS staff ORDER BY employer",
        ["employer", "staff"],
        [{"employer": "Acme", "staff": 2}, {"employer": "Analytical Engines Ltd", "staff": 1}],
    ),
    Read("count-limit", "MATCH (n) RETURN count(n) AS total LIMIT 1", ["total"], [{"total": 7}]),
    Read(
        "grouped-count-order-limit",
        "MATCH (p:Person)-[:WORKS_AT]->(o) RETURN o.name AS org, count(p) AS n "
        "ORDER BY n DESC LIMIT 1",
        ["org", "n"],
        [{"org": "Acme", "n": 2}],
    ),
]

#: Writes of every kind; each must be refused and change nothing.
WRITES = [
    "CREATE (n:Person {name: 'Mallory'}) RETURN n",
    "MERGE (n:Person {name: 'Ada'}) RETURN n",
    "MATCH (n:Person) DELETE n",
    "MATCH (n) DETACH DELETE n",
    "MATCH (n:Person) SET n.name = 'Mallory' RETURN n",
    "MATCH (n:Person) REMOVE n.description RETURN n",
    "match (n) with n create (m) return m",
    "CALL db.labels()",
    "LOAD CSV FROM 'file:///etc/passwd' AS line RETURN line",
    "MATCH (n) FOREACH (x IN [1] | SET n.x = x)",
    # kglite's own: a write without CREATE, an unbounded procedure, a subquery, a file.
    "INSERT (n:Person {name: 'Mallory'}) RETURN n",
    "MATCH (n) NODETACH DELETE n",
    "CALL pagerank() YIELD node, score RETURN node, score",
    "CALL { MATCH (n) RETURN n } RETURN n",
    "LOAD CSV WITH HEADERS FROM 'file:///etc/hostname' AS row RETURN row",
]
