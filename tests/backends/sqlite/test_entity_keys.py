"""One live entity per resolved name, enforced by the schema, and the migration to it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import text

from backends.sqlite import SQLiteBackend
from backends.sqlite.store import SQLiteStore
from nams_local.embeddings import HashingEmbedder


def _open(path: Path) -> SQLiteBackend:
    return SQLiteBackend(path, embedder=HashingEmbedder(), vector_index="numpy", extraction="off")


def _insert_entity(store: SQLiteStore, name: str, type_: str, key: str | None) -> None:
    """A row written straight through the writer's connection, as a code path that does
    not patch the mirror would."""

    def write() -> None:
        store.conn.execute(
            text(
                "INSERT INTO entities(id, workspace, name, name_key, type, properties, "
                "created_at, updated_at, resolve_key) VALUES (lower(hex(randomblob(16))), "
                "'default', :name, lower(:name), :type, '{}', :at, :at, :key)"
            ),
            {"name": name, "type": type_, "key": key, "at": "2026-01-01T00:00:00+00:00"},
        )

    store.run_sync(write)


async def test_the_schema_refuses_a_second_live_holder_of_a_key(tmp_path: Path) -> None:
    backend = _open(tmp_path / "k.db")
    try:
        first = await backend.add_entity("TechCorp", "organization")
        with pytest.raises(Exception, match="UNIQUE constraint failed"):
            _insert_entity(backend.store, "Tech-Corp", "organization", "organization\x1ftechcorp")
        # The same name of another type, or unkeyed, is allowed.
        _insert_entity(backend.store, "TechCorp", "tool", "tool\x1ftechcorp")
        _insert_entity(backend.store, "Techcorp", "organization", None)
        # Merged away, an entity gives its key up, so the target can hold it.
        other = await backend.add_entity("Initech", "organization")
        await backend.merge_entities(first.id, other.id)
        _insert_entity(backend.store, "Tech Corp", "organization", "organization\x1ftechcorp")
    finally:
        await backend.aclose()


async def test_a_conflicting_insert_reuses_the_holder_the_mirror_missed(tmp_path: Path) -> None:
    backend = _open(tmp_path / "k.db")
    try:
        await backend.get_graph()  # the mirror is loaded; the next row bypasses it
        _insert_entity(backend.store, "Lima", "location", "location\x1flima")
        names = [row.name for row in await backend.list_entities()]
        assert names == ["Lima"]
        again = await backend.add_entity("LIMA", "location")
        assert again.reused is True and again.name == "Lima"
        assert [row.name for row in await backend.list_entities()] == ["Lima"]
    finally:
        await backend.aclose()


async def test_renames_keep_one_holder_per_key(tmp_path: Path) -> None:
    backend = _open(tmp_path / "k.db")
    try:
        paris = await backend.add_entity("Paris", "location")
        lyon = await backend.add_entity("Lyon", "location")
        await backend.update_entity(lyon.id, name="paris")  # allowed: Lyon is now unkeyed
        again = await backend.add_entity("PARIS", "location")
        assert again.id == paris.id  # the oldest holder is reused
        await backend.delete_entity(paris.id)
        # The key is free again; resolution finds the renamed entity by name.
        assert (await backend.add_entity("Paris", "location")).id == lyon.id
    finally:
        await backend.aclose()


def _make_old_file(path: Path, duplicates: int) -> None:
    """A file as the code before the unique key wrote it, holding ``duplicates`` extra
    live entities named like an existing one (made with SQL, as racing writers did)."""
    conn = sqlite3.connect(path)
    conn.executescript(
        "DROP INDEX ux_entities_ws_resolve_key; ALTER TABLE entities DROP COLUMN resolve_key; "
        "DELETE FROM meta WHERE key = 'entity_keys'; DROP TABLE nams_generations;"
    )
    for (name,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'nams_%'"
    ).fetchall():
        conn.execute(f"DROP TRIGGER {name}")
    for n in range(duplicates):
        conn.execute(
            "INSERT INTO entities(id, workspace, name, name_key, type, properties, "
            "created_at, updated_at) SELECT :id, workspace, name, name_key, type, properties, "
            "created_at, updated_at FROM entities WHERE name = 'Lima' ORDER BY pk LIMIT 1",
            {"id": f"dup-{n}"},
        )
    conn.commit()
    conn.close()


def _dump(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


async def test_the_migration_keeps_duplicates_of_an_old_file_live_and_unkeyed(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    backend = _open(path)
    lima = await backend.add_entity("Lima", "location")
    await backend.add_entity("Quito", "location")
    await backend.aclose()
    _make_old_file(path, duplicates=2)

    backend = _open(path)
    try:
        listed = await backend.list_entities()  # nothing was merged or hidden
        assert sorted(row.name for row in listed) == ["Lima", "Lima", "Lima", "Quito"]
        assert {row.id for row in listed if row.name == "Lima"} == {lima.id, "dup-0", "dup-1"}
        assert (await backend.add_entity("lima", "location")).id == lima.id  # the oldest
        await backend.delete_entity(lima.id)
        # A duplicate now answers for the name; the schema still allows only one holder.
        survivor = await backend.add_entity("Lima", "location")
        assert survivor.reused is True and survivor.id in ("dup-0", "dup-1")
    finally:
        await backend.aclose()
    conn = sqlite3.connect(path)
    keys = conn.execute(
        "SELECT id, resolve_key FROM entities WHERE name = 'Lima' ORDER BY pk"
    ).fetchall()
    conn.close()
    assert [key for _, key in keys] == [None, None]  # neither duplicate claimed on its own
    # Opening again changes nothing (the migration ran once).
    before = _dump(path)
    await _open(path).aclose()
    assert _dump(path) == before


async def test_a_failed_migration_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    backend = _open(path)
    await backend.add_entity("Lima", "location")
    await backend.aclose()
    _make_old_file(path, duplicates=1)
    conn = sqlite3.connect(path)  # a name that is not text: the re-keying fails on it
    conn.execute("UPDATE entities SET name = x'00ff' WHERE id = 'dup-0'")
    conn.commit()
    conn.close()
    before = _dump(path)
    with pytest.raises(TypeError):
        _open(path)
    assert _dump(path) == before


async def test_the_legacy_api_keeps_names_that_merely_resolve_alike_apart(
    tmp_path: Path,
) -> None:
    backend = _open(tmp_path / "k.db")
    try:
        first = await backend.legacy.upsert_entity("TechCorp", "organization")
        second = await backend.legacy.upsert_entity("TechCorps", "organization")
        assert first.id != second.id  # exact identity: two entities, one holds the key
        assert (await backend.add_entity("techcorp", "organization")).id == first.id
        await backend.delete_entity(first.id)
        # Resolution finds the other by name; the schema lets it be the only holder.
        assert (await backend.add_entity("Tech Corp", "organization")).id == second.id
        assert len(await backend.list_entities()) == 1
    finally:
        await backend.aclose()
