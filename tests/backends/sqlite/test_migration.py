"""Schema upgrades in place: a version-1 file written by an earlier release opens, upgrades
to the current version and keeps everything; a failed upgrade leaves the file as it was."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Connection

from backends.sqlite import SQLiteBackend, migrations
from backends.sqlite import schema as s

#: Written by main at 295f78a (see tests/data/v1/README.md).
V1_FILE = Path(__file__).parents[2] / "data" / "v1" / "store-v1.db"


@pytest.fixture
def v1_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "old.db"
    shutil.copyfile(V1_FILE, copy)
    return copy


def _dump(path: Path) -> list[str]:
    """Every schema statement and row of the file (journal mode aside)."""
    conn = sqlite3.connect(path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def _columns(path: Path, table: str) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
    finally:
        conn.close()


def _version(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("SELECT version FROM schema_version").fetchone()[0])
    finally:
        conn.close()


def test_the_fixture_is_a_version_1_file() -> None:
    assert _version(V1_FILE) == 1
    assert "valid_from" not in _columns(V1_FILE, "relationships")


async def test_a_version_1_file_upgrades_in_place_and_keeps_its_graph(v1_copy: Path) -> None:
    async with SQLiteBackend(v1_copy, embeddings=False, extraction="off") as backend:
        graph = await backend.get_graph()
        by_type = {edge.type: edge for edge in graph.edges}
        assert set(by_type) == {"LIVES_IN", "WORKS_AT", "VISITED"}
        visited = by_type["VISITED"]
        assert visited.properties == {"note": "v1"}
        assert visited.confidence == 0.8
        # Edges from before validity existed hold from whenever we learned them, still.
        assert all(edge.valid_until is None and edge.current for edge in graph.edges)
        assert all(edge.valid_from is None for edge in graph.edges)
        names = {node.name for node in graph.nodes}
        assert {"Alex", "Bangalore", "TechCorp", "Chennai"} <= names
        messages = await backend.list_messages((await backend.list_conversations())[0].id)
        assert len(messages) == 2
    assert _version(v1_copy) == s.SCHEMA_VERSION == 2
    assert set(s.VALIDITY_COLUMNS) <= _columns(v1_copy, "relationships")


async def test_an_upgraded_file_supersedes_its_old_edges(v1_copy: Path) -> None:
    """The old ``LIVES_IN Bangalore`` edge is closed by a move stated after the upgrade."""
    async with SQLiteBackend(v1_copy, embeddings=False) as backend:
        conversation = (await backend.list_conversations())[0]
        await backend.add_message(conversation.id, "user", "I moved to Berlin in October.")
        graph = await backend.get_graph()
        names = {node.id: node.name for node in graph.nodes}
        lives = {names[e.target]: e for e in graph.edges if e.type == "LIVES_IN"}
        assert set(lives) == {"Bangalore", "Berlin"}
        assert lives["Berlin"].current and not lives["Bangalore"].current
        assert lives["Bangalore"].superseded_by == lives["Berlin"].id
        assert lives["Bangalore"].valid_until == lives["Berlin"].valid_from


@pytest.fixture
def failing_step(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The real upgrade step, then a failure before the upgrade can finish."""
    real = migrations.STEPS[0]

    def then_fail(conn: Connection) -> None:
        real(conn)
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(migrations, "STEPS", (then_fail,))
    yield


@pytest.mark.usefixtures("failing_step")
async def test_a_failed_upgrade_leaves_the_file_as_it_was(v1_copy: Path) -> None:
    before = _dump(v1_copy)
    with pytest.raises(RuntimeError, match="disk on fire"):
        SQLiteBackend(v1_copy, embeddings=False, extraction="off")
    assert _dump(v1_copy) == before
    assert _version(v1_copy) == 1
    assert "valid_from" not in _columns(v1_copy, "relationships")


async def test_after_a_failed_upgrade_the_next_open_upgrades(
    v1_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = migrations.STEPS

    def fail(conn: Connection) -> None:
        raise RuntimeError("interrupted")

    monkeypatch.setattr(migrations, "STEPS", (fail,))
    with pytest.raises(RuntimeError):
        SQLiteBackend(v1_copy, embeddings=False, extraction="off")
    monkeypatch.setattr(migrations, "STEPS", real)
    async with SQLiteBackend(v1_copy, embeddings=False, extraction="off") as backend:
        assert len((await backend.get_graph()).edges) == 3
    assert _version(v1_copy) == 2


async def test_a_file_from_a_newer_version_is_refused_untouched(v1_copy: Path) -> None:
    conn = sqlite3.connect(v1_copy)
    conn.execute("UPDATE schema_version SET version = 99")
    conn.commit()
    conn.close()
    before = _dump(v1_copy)
    with pytest.raises(Exception, match="schema version 99"):
        SQLiteBackend(v1_copy, embeddings=False, extraction="off")
    assert _dump(v1_copy) == before
