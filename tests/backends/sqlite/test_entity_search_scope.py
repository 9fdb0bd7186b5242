"""Entity full-text search drops the workspace's scope token only when no other workspace
has entities (``entities._sole_workspace``): alone or beside a busy neighbour, a workspace
finds its own entities and nothing of the other's."""

from __future__ import annotations

from pathlib import Path

from backends.sqlite import SQLiteBackend

QUERY = "lima office team"


async def test_a_workspace_finds_its_own_entities_alone_and_beside_a_busy_one(
    tmp_path: Path,
) -> None:
    root = SQLiteBackend(tmp_path / "e.sqlite3", embeddings=False, extraction="off")
    try:
        mine, theirs = root.for_workspace("mine"), root.for_workspace("theirs")
        await mine.add_entity("Lima office", "place", "where we meet")
        await mine.add_entity("Quito depot", "place", "spare parts")
        alone = await mine.search_entities(QUERY, limit=5)
        assert [e.name for e in alone.items] == ["Lima office"]

        # More and better matches than the search's candidates (40), in another workspace:
        # were they ranked with mine, they would crowd mine out before the workspace filter.
        for i in range(60):
            await theirs.add_entity(f"Lima office team {i}", "place", "lima office team")
        beside = await mine.search_entities(QUERY, limit=5)
        assert [e.name for e in beside.items] == ["Lima office"]
        other = await theirs.search_entities(QUERY, limit=5)
        assert len(other.items) == 5
        assert all(e.name.startswith("Lima office team") for e in other.items)
    finally:
        await root.aclose()
