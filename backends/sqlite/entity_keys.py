"""The schema's guarantee that a name resolves to one live entity, across processes.

Entity resolution (``resolution.py``) reuses the entity a name's match key points at. The
mirror answers that in memory, and ``freshness.py`` keeps the mirror true across
processes; this module makes a duplicate impossible even so. Each live entity may hold a
``resolve_key`` — ``<type key> US <match key>`` — and a partial unique index allows one
live holder per key and workspace. Creating through resolution is ``INSERT ... ON CONFLICT
DO NOTHING``; when the insert yields no row, the key's holder is reused (no
check-then-insert window).

The key is the match key *without* configured aliases: aliases are a per-store setting,
and a stored key must mean the same to every process that opens the file (resolution
with aliases still happens in the mirror, before the insert).

Not every live entity holds its key, by design:
* the legacy (TCK) API creates entities by exact name, so "TechCorp" and "TechCorps" are
  two entities there; the second gets no key (``claim`` leaves it unkeyed);
* a rename onto a key another entity holds keeps the rename, unkeyed;
* a merged (inert) entity holds no key, so its target can take it;
* a file written before this module may already hold duplicates. The migration keeps the
  oldest live entity of each key as its holder and leaves the later duplicates live,
  visible and unchanged but unkeyed — resolution already reused the oldest, so nothing
  anyone sees changes; merging them stays an explicit decision (``merge_entities``).
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from sqlalchemy import Connection, select, text

from . import dbapi
from . import schema as s
from .resolution import Resolution
from .rows import insert_rows

logger = logging.getLogger("nams_local.sqlite")

__all__ = [
    "KEYS_VERSION",
    "claim",
    "holder",
    "insert_resolved",
    "insert_unresolved",
    "migrate",
    "release",
    "resolve_key",
]

#: Recorded in ``meta`` as ``entity_keys``; bump when ``resolve_key`` computes differently,
#: and the next open re-keys the file.
KEYS_VERSION = "1"

_PLAIN = Resolution()
_INDEX = "ux_entities_ws_resolve_key"
e = s.entities


def resolve_key(name: str, type_: str) -> str:
    """The stored identity of a live entity named ``name`` of ``type_`` (no aliases)."""
    return f"{type_.strip().casefold()}\x1f{_PLAIN.key(name, type_)}"


def insert_resolved(conn: Connection, values: dict[str, Any]) -> int | None:
    """Insert a new entity holding its resolve key; ``None`` when a live entity already
    holds it (nothing inserted: reuse ``holder``)."""
    row = {**values, "resolve_key": resolve_key(values["name"], values["type"])}
    # Driver SQL: every extracted new name runs this on the writer, and the Core upsert
    # built per call cost several times what SQLite takes to run it.
    found = dbapi.fetch_one(conn, _insert_resolved_sql(tuple(row)), tuple(row.values()))
    return None if found is None else int(found[0])


@functools.cache
def _insert_resolved_sql(columns: tuple[str, ...]) -> str:
    """``INSERT ... ON CONFLICT DO NOTHING RETURNING pk`` for these columns (the insert
    Core's ``on_conflict_do_nothing`` wrote: any unique key taken inserts nothing)."""
    for column in columns:
        if column not in e.c:
            raise KeyError(f"entities has no column {column!r}")
    names = ", ".join(f'"{column}"' for column in columns)
    marks = ", ".join("?" * len(columns))
    return f"INSERT INTO entities({names}) VALUES ({marks}) ON CONFLICT DO NOTHING RETURNING pk"


def insert_unresolved(conn: Connection, values: dict[str, Any]) -> int:
    """Insert a new entity whatever its name resolves to (the legacy API's exact
    identity); it holds its key only if no live entity does."""
    (pk,) = insert_rows(conn, e, [values])
    claim(conn, pk, values["name"], values["type"])
    return pk


def holder(conn: Connection, workspace: str, name: str, type_: str) -> str | None:
    """The id of the live entity holding the key of ``name`` of ``type_``, if any."""
    found = conn.execute(
        select(e.c.id).where(
            e.c.workspace == workspace,
            e.c.resolve_key == resolve_key(name, type_),
            e.c.merged_into_pk.is_(None),
        )
    ).scalar()
    return None if found is None else str(found)


def claim(conn: Connection, pk: int, name: str, type_: str) -> bool:
    """Give a live entity the key of its (new) name unless another live entity holds it."""
    done = conn.execute(
        text(
            "UPDATE OR IGNORE entities SET resolve_key = :key "
            "WHERE pk = :pk AND merged_into_pk IS NULL"
        ),
        {"key": resolve_key(name, type_), "pk": pk},
    )
    return bool(done.rowcount)


def release(conn: Connection, pk: int) -> None:
    """The entity no longer holds a key (renamed, or merged away)."""
    conn.execute(text("UPDATE entities SET resolve_key = NULL WHERE pk = :pk"), {"pk": pk})


def migrate(conn: Connection) -> None:
    """Add and fill ``resolve_key`` and its unique index unless the file has them (call
    inside the schema migration's transaction: a failure leaves the file as it was)."""
    columns = {row[1] for row in conn.exec_driver_sql("PRAGMA table_info(entities)")}
    if "resolve_key" not in columns:
        conn.exec_driver_sql("ALTER TABLE entities ADD COLUMN resolve_key TEXT")
    recorded = conn.execute(select(s.meta.c.value).where(s.meta.c.key == "entity_keys")).scalar()
    indexed = conn.execute(
        text("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = :name"),
        {"name": _INDEX},
    ).first()
    if recorded == KEYS_VERSION and indexed:
        return
    conn.exec_driver_sql(f"DROP INDEX IF EXISTS {_INDEX}")
    conn.exec_driver_sql("UPDATE entities SET resolve_key = NULL")
    held: set[tuple[str, str]] = set()
    keyed: list[dict[str, Any]] = []
    duplicates = 0
    for pk, workspace, name, type_ in conn.execute(
        select(e.c.pk, e.c.workspace, e.c.name, e.c.type)
        .where(e.c.merged_into_pk.is_(None))
        .order_by(e.c.pk)
    ):
        slot = (workspace, resolve_key(name, type_))
        if slot in held:
            duplicates += 1
            continue
        held.add(slot)
        keyed.append({"pk": pk, "key": slot[1]})
    if keyed:
        conn.execute(text("UPDATE entities SET resolve_key = :key WHERE pk = :pk"), keyed)
    conn.exec_driver_sql(
        f"CREATE UNIQUE INDEX {_INDEX} ON entities(workspace, resolve_key) "
        "WHERE merged_into_pk IS NULL"
    )
    conn.execute(
        text("INSERT OR REPLACE INTO meta(key, value) VALUES ('entity_keys', :v)"),
        {"v": KEYS_VERSION},
    )
    if duplicates:
        logger.warning(
            "%d live entities duplicate an older entity's name and type; they stay as "
            "they are (unkeyed) and can be merged explicitly",
            duplicates,
        )
