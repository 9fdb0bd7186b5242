"""The SQL of the hottest reads, as text built once from the schema's tables.

Building a SQLAlchemy Core ``select`` and executing it costs about 170 us of CPU per
statement on this engine (construction, operator coercion, cache-key generation, the
compiled-cache lookup), where the same statement as driver SQL costs about 40 us. A cached
``GET`` runs two or three statements, so on a server that is CPU-bound under the GIL that
difference was a large part of a read's cost. The statements here are the ones every
list/get/search request runs; they are written once, from the ``Table`` objects (so a
column added to the schema is selected too), and run with ``dbapi.fetch_one``/``fetch_all``
on the DB-API cursor inside the caller's transaction: named tuples with the columns as
attributes (every column is ``Text`` or ``Integer``: there is no result processing to
lose), without ``exec_driver_sql``'s ``CursorResult`` set-up, which was about a tenth of
a reader's CPU for a conversation search (its result metadata, per call).

Everything else keeps using Core: it is clearer, and only the hot paths pay for this.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Table

from . import dbapi
from . import schema as s

__all__ = [
    "ENTITIES_BY_PKS",
    "conversations_of_user",
    "conversations_of_workspace",
    "current_entities_by_pks",
    "messages_by_pks",
    "messages_newest_first",
    "relationship_by_id",
    "relationships_of_entities",
    "row_by_id",
    "steps_of_conversations",
]


def _columns(table: Table, alias: str | None = None) -> str:
    prefix = f"{alias}." if alias else ""
    return ", ".join(f'{prefix}"{column.name}"' for column in table.columns)


@functools.cache
def _by_id(table: Table) -> str:
    return f'SELECT {_columns(table)} FROM "{table.name}" WHERE id = ? AND workspace = ?'


def row_by_id(conn: Connection, table: Table, id_: str, workspace: str) -> Any | None:
    """The row of ``table`` with API id ``id_`` in ``workspace`` (``Ctx.row``'s lookup), a
    named tuple read on the DB-API cursor (``dbapi.py``): every unit of work on the
    writer looks up a row or two by id, most of them several times per message applied."""
    return dbapi.fetch_one(conn, _by_id(table), (id_, workspace))


_ORDER = "ORDER BY updated_at DESC, pk DESC LIMIT ?"
_CONVERSATIONS = f"SELECT {_columns(s.conversations)} FROM conversations WHERE workspace = ? "
_OF_WORKSPACE = _CONVERSATIONS + _ORDER
_OF_USER = _CONVERSATIONS + "AND user_id = ? " + _ORDER


def conversations_of_workspace(conn: Connection, workspace: str, limit: int) -> list[Any]:
    """The workspace's conversations, most recently updated first."""
    return dbapi.fetch_all(conn, _OF_WORKSPACE, (workspace, limit))


def conversations_of_user(conn: Connection, workspace: str, user_id: str, limit: int) -> list[Any]:
    """One user's conversations in the workspace, most recently updated first."""
    return dbapi.fetch_all(conn, _OF_USER, (workspace, user_id, limit))


_NEWEST = (
    f"SELECT {_columns(s.messages)} FROM messages WHERE conversation_pk = ? "
    "ORDER BY pk DESC LIMIT ?"
)


def messages_newest_first(conn: Connection, conversation_pk: int, limit: int) -> list[Any]:
    """A conversation's newest ``limit`` messages, newest first."""
    return dbapi.fetch_all(conn, _NEWEST, (conversation_pk, limit))


_BY_PKS = (
    f"SELECT {_columns(s.messages, 'm')}, c.id AS conv_id FROM messages AS m "
    "JOIN conversations AS c ON c.pk = m.conversation_pk WHERE m.pk IN ({marks})"
)


def messages_by_pks(conn: Connection, pks: Sequence[int]) -> list[Any]:
    """The messages with these pks (any order), each with its conversation's API id as
    ``conv_id``. ``pks`` is bounded by the caller (a search's limit per conversation)."""
    if not pks:
        return []
    sql = _BY_PKS.format(marks=", ".join("?" * len(pks)))
    return dbapi.fetch_all(conn, sql, tuple(int(pk) for pk in pks))


_STEPS_OF = (
    f"SELECT {_columns(s.steps)} FROM steps WHERE conversation_pk IN ({{marks}}) ORDER BY pk"
)


def steps_of_conversations(conn: Connection, conversation_pks: Sequence[int]) -> list[Any]:
    """The reasoning steps of these conversations, oldest first (``pk`` order).
    ``conversation_pks`` is bounded by the caller (a few conversations of one user)."""
    if not conversation_pks:
        return []
    sql = _STEPS_OF.format(marks=", ".join("?" * len(conversation_pks)))
    return dbapi.fetch_all(conn, sql, tuple(int(pk) for pk in conversation_pks))


_RELATIONSHIP = (
    f"SELECT {_columns(s.relationships, 'r')}, src.id AS s_id, dst.id AS t_id "
    "FROM relationships AS r JOIN entities AS src ON src.pk = r.source_pk "
    "JOIN entities AS dst ON dst.pk = r.target_pk WHERE r.id = ?"
)


def relationship_by_id(conn: Connection, rel_id: str) -> Any | None:
    """A relationship row with its endpoints' API ids as ``s_id`` and ``t_id``. Every
    extracted or written edge reads itself back through this (twice: for the graph mirror
    and for the answer), and the Core version built two ``aliased`` tables per call — the
    largest single cost of applying an extraction on the writer."""
    return dbapi.fetch_one(conn, _RELATIONSHIP, (rel_id,))


#: ``+workspace``: without the unary plus SQLite's planner (no ANALYZE statistics) reads
#: the workspace's whole partial index ``ux_entities_ws_resolve_key`` (workspace = ?,
#: merged_into_pk IS NULL) instead of the few rowids: 1.7 ms at 10k entities for 5 rows,
#: growing with the workspace; by rowid it is a few microseconds.
ENTITIES_BY_PKS = (
    f"SELECT {_columns(s.entities)} FROM entities WHERE pk IN ({{marks}}) "
    "AND +workspace = ? AND merged_into_pk IS NULL"
)


def current_entities_by_pks(conn: Connection, pks: Sequence[int], workspace: str) -> list[Any]:
    """The workspace's unmerged entities with these pks (any order; every search hit
    reads them, ``pks`` bounded by its limit)."""
    if not pks:
        return []
    sql = ENTITIES_BY_PKS.format(marks=", ".join("?" * len(pks)))
    return dbapi.fetch_all(conn, sql, (*(int(pk) for pk in pks), workspace))


#: Both directions of the relationships of some entities in one statement, the far end's
#: id, name and type joined; ``outgoing`` 1 for edges the entity is the source of.
_RELATIONSHIPS_OF = (
    "SELECT * FROM ("
    f"SELECT {_columns(s.relationships, 'r')}, r.source_pk AS near_pk, 1 AS outgoing, "
    "o.id AS o_id, o.name AS o_name, o.type AS o_type FROM relationships r "
    "JOIN entities o ON o.pk = r.target_pk WHERE r.source_pk IN ({marks}) "
    "UNION ALL "
    f"SELECT {_columns(s.relationships, 'r')}, r.target_pk AS near_pk, 0 AS outgoing, "
    "o.id AS o_id, o.name AS o_name, o.type AS o_type FROM relationships r "
    "JOIN entities o ON o.pk = r.source_pk WHERE r.target_pk IN ({marks})"
    ") ORDER BY outgoing DESC, pk"
)


def relationships_of_entities(conn: Connection, pks: Sequence[int]) -> list[Any]:
    """Every relationship touching ``pks``: outgoing ones first, each direction in
    creation order (``entities.relationships_of``)."""
    if not pks:
        return []
    keys = tuple(int(pk) for pk in pks)
    sql = _RELATIONSHIPS_OF.format(marks=", ".join("?" * len(keys)))
    return dbapi.fetch_all(conn, sql, keys + keys)
