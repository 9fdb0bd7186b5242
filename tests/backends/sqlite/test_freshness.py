"""The change signal forgets exactly the mirrors another connection changed.

Two ``SQLiteBackend`` objects on one path have separate writer connections, so between
them ``PRAGMA data_version`` and the stamps behave as between processes (the real second
process is in ``test_many_processes.py``); here the mirrors themselves are observed.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import sqlean.dbapi2 as sqlean  # the engine's library: see test_keystore_file

from backends.sqlite import SQLiteBackend
from backends.sqlite.graph import EntityGraphMirror
from nams_local.embeddings import HashingEmbedder
from nams_local.errors import BackendUnavailableError


def _open(path: Path, workspace: str = "one") -> SQLiteBackend:
    return SQLiteBackend(path, embedder=HashingEmbedder(), workspace=workspace, extraction="off")


def _mirror(backend: SQLiteBackend, workspace: str) -> EntityGraphMirror:
    store = backend.store
    return store.run_sync(lambda: store.graph(workspace))


@pytest.fixture
async def pair(tmp_path: Path) -> AsyncIterator[tuple[SQLiteBackend, SQLiteBackend]]:
    first, second = _open(tmp_path / "f.db"), _open(tmp_path / "f.db")
    yield first, second
    await first.aclose()
    await second.aclose()


async def test_only_the_workspaces_another_writer_changed_are_reloaded(
    pair: tuple[SQLiteBackend, SQLiteBackend],
) -> None:
    mine, theirs = pair
    mine_two, theirs_two = mine.for_workspace("two"), theirs.for_workspace("two")
    await mine.add_entity("Alice", "person")
    await mine_two.add_entity("Bob", "person")
    one, two = _mirror(mine, "one"), _mirror(mine, "two")
    seen = mine.store.freshness.foreign_changes

    conversation = await theirs.create_conversation("u")  # no entity: nothing to forget
    await theirs.add_message(conversation.id, "user", "hello")
    assert _mirror(mine, "one") is one and _mirror(mine, "two") is two
    assert mine.store.freshness.foreign_changes > seen  # the signal did fire

    carol = await theirs_two.add_entity("Carol", "person")
    assert _mirror(mine, "one") is one  # untouched workspace: kept
    reloaded = _mirror(mine, "two")
    assert reloaded is not two and carol.id in reloaded.graph

    # Our own writes are not news to us: after the other side writes elsewhere, the
    # mirror we patched ourselves is kept.
    dave = await mine.add_entity("Dave", "person")
    one = _mirror(mine, "one")
    assert dave.id in one.graph
    await theirs.create_conversation("v")
    assert _mirror(mine, "one") is one


async def test_a_rename_and_a_merge_by_the_other_writer_show_at_once(
    pair: tuple[SQLiteBackend, SQLiteBackend],
) -> None:
    mine, theirs = pair
    alex = await mine.add_entity("Alex", "person")
    alexander = await mine.add_entity("Alexander", "person")
    await theirs.update_entity(alex.id, name="Alexandra")
    names = {node.id: node.name for node in (await mine.get_graph()).nodes}
    assert names[alex.id] == "Alexandra"
    assert (await mine.add_entity("alexandra", "person")).id == alex.id  # resolution too
    await theirs.merge_entities(alexander.id, alex.id)
    assert [node.id for node in (await mine.get_graph()).nodes] == [alex.id]
    # The merge handed nothing a key it already had; a new "Alexander" is a new entity.
    again = await mine.add_entity("Alexander", "person")
    assert again.reused is False


async def test_a_writer_held_too_long_elsewhere_is_a_503_not_a_crash(tmp_path: Path) -> None:
    """Every unit takes the write lock first and waits for another process's writer; past
    ``busy_timeout`` (5 s) it fails as unavailable, having changed nothing."""
    path = tmp_path / "busy.db"
    backend = _open(path)
    other = sqlean.connect(str(path), timeout=1, isolation_level=None)
    try:
        await backend.add_entity("Before", "thing")
        other.execute("BEGIN IMMEDIATE")
        started = time.monotonic()
        with pytest.raises(BackendUnavailableError, match="locked by another process"):
            await backend.add_entity("During", "thing")
        assert time.monotonic() - started >= 4.5  # it did wait for the other writer
        other.execute("ROLLBACK")
        assert [e.name for e in await backend.list_entities()] == ["Before"]
        assert (await backend.add_entity("After", "thing")).reused is False
    finally:
        other.close()
        await backend.aclose()
