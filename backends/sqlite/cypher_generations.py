"""Which version of a workspace's memory graph a Cypher worker has cached.

A Cypher worker keeps the graph it last built (``cypher_worker.py``), so a query over an
unchanged workspace skips reading, sending and building the projection. The version is a
number per workspace that triggers stamp on every write to a projected table — entities,
relationships, mentions, conversations, messages, steps, tool calls — from any process
writing the file (the triggers are stored in it), with a global, increasing number as
``freshness.py`` stamps its own table.

It is a table of its own rather than ``freshness.nams_generations``: that one tells the
writer to drop its entity mirrors and ignores columns the mirrors do not hold, while every
message written must change this one.
"""

from __future__ import annotations

from sqlalchemy import Connection, text

__all__ = ["CYPHER_GENERATIONS_DDL", "generation"]

_NEXT = "(SELECT coalesce(max(n), 0) + 1 FROM nams_cypher_generations)"
_UPSERT = "ON CONFLICT(workspace) DO UPDATE SET n = excluded.n"


def _trigger(table: str, when: str, row: str) -> str:
    name = f"nams_cypher_stamp_{table}_{when.lower()}"
    return (
        f"CREATE TRIGGER IF NOT EXISTS {name} AFTER {when} ON {table} BEGIN "
        f"INSERT INTO nams_cypher_generations(workspace, n) VALUES ({row}.workspace, {_NEXT}) "
        f"{_UPSERT}; END"
    )


def _mention_trigger(when: str, row: str) -> str:
    """Mentions have no workspace column: their entity's (a mention deleted with its
    entity stamps nothing here; the entity's own delete did)."""
    return (
        f"CREATE TRIGGER IF NOT EXISTS nams_cypher_stamp_entity_mentions_{when.lower()} "
        f"AFTER {when} ON entity_mentions BEGIN "
        f"INSERT INTO nams_cypher_generations(workspace, n) SELECT workspace, {_NEXT} "
        f"FROM entities WHERE pk = {row}.entity_pk {_UPSERT}; END"
    )


_TABLES = ("entities", "relationships", "conversations", "messages", "steps", "tool_calls")

#: The table and its triggers (idempotent; run by the schema migration).
CYPHER_GENERATIONS_DDL = (
    "CREATE TABLE IF NOT EXISTS nams_cypher_generations "
    "(workspace TEXT PRIMARY KEY, n INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS ix_nams_cypher_generations_n ON nams_cypher_generations(n)",
    *(
        _trigger(table, when, "OLD" if when == "DELETE" else "NEW")
        for table in _TABLES
        for when in ("INSERT", "UPDATE", "DELETE")
    ),
    _mention_trigger("INSERT", "NEW"),
    _mention_trigger("DELETE", "OLD"),
)


def generation(conn: Connection, workspace: str) -> int:
    """The workspace's graph version (0 before its first write)."""
    found = conn.execute(
        text("SELECT n FROM nams_cypher_generations WHERE workspace = :w"), {"w": workspace}
    ).scalar()
    return int(found or 0)
