"""An identical relationship (same ends, same type, still current) is reused, not doubled.

Issue 15, item 11: on main at 295f78a, re-running the README's first example on the same
``memory.db`` added a second identical ``WORKS_AT`` edge each time.
"""

from __future__ import annotations

from pathlib import Path

from backends.sqlite import SQLiteBackend


async def _readme_first_example(db: Path) -> None:
    """The entity part of the README's first example, as a script run would do it."""
    async with SQLiteBackend(db, embeddings=False, extraction="off") as memory:
        alex = await memory.add_entity("Alex", "Person", "the user")
        corp = await memory.add_entity("TechCorp", "Organization")
        await memory.add_relationship(alex.id, corp.id, "WORKS_AT")


async def test_rerunning_the_readme_example_keeps_one_works_at_edge(tmp_path: Path) -> None:
    """Reproduces: two runs on one file left two identical WORKS_AT edges."""
    db = tmp_path / "memory.db"
    await _readme_first_example(db)
    await _readme_first_example(db)
    async with SQLiteBackend(db, embeddings=False, extraction="off") as memory:
        graph = await memory.get_graph()
        answer = await memory.query("MATCH (a)-[r:WORKS_AT]->(b) RETURN count(r) AS n")
    assert [e.type for e in graph.edges] == ["WORKS_AT"]
    assert answer.rows == [{"n": 1}]


async def test_the_reused_edge_keeps_its_id_and_gains_only_new_property_keys() -> None:
    async with SQLiteBackend(":memory:", embeddings=False, extraction="off") as memory:
        a = await memory.add_entity("Ada", "Person")
        b = await memory.add_entity("Acme", "Organization")
        first = await memory.add_relationship(a.id, b.id, "WORKS_AT", {"since": "2020"})
        again = await memory.add_relationship(
            a.id, b.id, "WORKS_AT", {"since": "1999", "role": "cto"}, confidence=0.5
        )
        assert again.id == first.id
        assert again.properties == {"since": "2020", "role": "cto"}
        assert again.confidence == 0.5  # it had none
        [edge] = (await memory.get_graph()).edges
        assert edge.properties == {"since": "2020", "role": "cto"} and edge.confidence == 0.5


async def test_other_type_direction_or_ends_are_new_edges() -> None:
    """Identity is (source, target, type): a reversed edge or another type is a different
    relationship; a type in other case or spelling (``works_at``, ``Works-At``) is the same
    type, as the validity rules and Cypher (Q2) read types."""
    async with SQLiteBackend(":memory:", embeddings=False, extraction="off") as memory:
        a = await memory.add_entity("Ada", "Person")
        b = await memory.add_entity("Acme", "Organization")
        ids = {
            (await memory.add_relationship(a.id, b.id, "WORKS_AT")).id,
            (await memory.add_relationship(b.id, a.id, "WORKS_AT")).id,
            (await memory.add_relationship(a.id, b.id, "FOUNDED")).id,
        }
        assert len(ids) == 3
        same = await memory.add_relationship(a.id, b.id, "Works-At")
        assert same.id in ids
        assert len((await memory.get_graph()).edges) == 3
        # Deleting the edge makes the next identical one new again.
        first = await memory.add_relationship(a.id, b.id, "WORKS_AT")
        await memory.delete_relationship(first.id)
        assert (await memory.add_relationship(a.id, b.id, "WORKS_AT")).id != first.id
