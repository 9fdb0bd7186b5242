"""Two processes on one database file see each other's writes on their next call.

The store in the test and a real second process (``peer.py``) share one file. Each keeps
its own graph mirror, resolution index and entity-vector cache in memory; every call must
nevertheless answer from the file as it is now (``freshness.py``), and resolving the same
new name at the same time in both must create one entity (``entity_keys.py``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from backends.sqlite import SQLiteBackend
from nams_local.embeddings import HashingEmbedder
from nams_local.models import EntityGraph

from .peer import graph_ids
from .peers import Peer, peer_process


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "shared.db"


@pytest.fixture
async def local(db: Path) -> AsyncIterator[SQLiteBackend]:
    backend = SQLiteBackend(db, embedder=HashingEmbedder(), extraction="sync")
    yield backend
    await backend.aclose()


@pytest.fixture
def peer(db: Path, local: SQLiteBackend) -> Iterator[Peer]:
    with peer_process(db) as other:  # after ``local`` created the file
        yield other


async def _vector_hits(backend: SQLiteBackend, query: str) -> set[str]:
    found = await backend.search_entities(query, mode="vector", limit=50)
    return {item.id for item in found.items}


def _ids(graph: EntityGraph) -> tuple[set[str], set[str]]:
    got = graph_ids(graph)
    return set(got["nodes"]), set(got["edges"])


async def test_each_process_sees_the_others_entities_and_edges(
    local: SQLiteBackend, peer: Peer
) -> None:
    # Both mirrors and vector caches are loaded (empty) before the other side writes.
    assert _ids(await local.get_graph()) == (set(), set())
    assert await _vector_hits(local, "Alice") == set()
    assert peer.ask("graph") == {"nodes": [], "edges": []}
    assert peer.ask("search", query="Carol") == []

    alice = peer.ask("add_entity", name="Alice", type="person")
    bob = peer.ask("add_entity", name="Bob", type="person")
    knows = peer.ask("add_relationship", source=alice, target=bob)

    nodes, edges = _ids(await local.get_graph())
    assert nodes == {alice, bob} and edges == {knows}
    assert _ids(await local.entity_neighbourhood(alice)) == ({alice, bob}, {knows})
    assert alice in await _vector_hits(local, "Alice")

    carol = (await local.add_entity("Carol", "person")).id
    likes = (await local.add_relationship(bob, carol, "KNOWS")).id
    assert set(peer.ask("graph")["nodes"]) == {alice, bob, carol}
    assert set(peer.ask("graph")["edges"]) == {knows, likes}
    assert peer.ask("neighbourhood", id=carol) == {
        "nodes": sorted([bob, carol]),
        "edges": [likes],
    }
    assert carol in peer.ask("search", query="Carol")

    # Deletions: the peer removes an edge and an entity (its edges go with it).
    peer.ask("delete_relationship", id=knows)
    assert _ids(await local.entity_neighbourhood(alice)) == ({alice}, set())
    peer.ask("delete_entity", id=bob)
    assert _ids(await local.get_graph()) == ({alice, carol}, set())
    assert bob not in await _vector_hits(local, "Bob")

    await local.delete_entity(alice)
    assert peer.ask("graph") == {"nodes": [carol], "edges": []}
    assert alice not in peer.ask("search", query="Alice")


async def test_resolution_reuses_what_the_other_process_created(
    local: SQLiteBackend, peer: Peer
) -> None:
    assert _ids(await local.get_graph()) == (set(), set())  # the mirror is loaded, empty
    conversation = peer.ask("conversation", user_id="u1")
    peer.ask("say", conversation=conversation, text="Last week I flew to Lima for work.")
    mine = await local.add_entity("lima", "location")
    assert mine.reused is True
    assert peer.ask("entities").count(["Lima", "location"]) == 1


async def test_extracting_the_same_new_name_at_once_yields_one_entity(
    local: SQLiteBackend, peer: Peer
) -> None:
    theirs = peer.ask("conversation", user_id="u1")
    ours = (await local.create_conversation("u1")).id
    names = [f"Vel{chr(ord('a') + i)}mora" for i in range(12)]
    for name in names:
        said = f"Last week I flew to {name} for a conference."
        peer.send("say", conversation=theirs, text=said)  # runs while we write the same
        await local.add_message(ours, "user", said)
        assert peer.answer() is None
    await local.wait_for_extraction()  # ours runs right after each ack (sync mode)
    store = local.store  # not a second SQLite library in this process: see test_keystore_file
    rows = store.run_sync(
        lambda: store.conn.execute(
            text(
                "SELECT name, count(*) FROM entities WHERE merged_into_pk IS NULL "
                "GROUP BY workspace, lower(name), lower(type)"
            )
        ).all()
    )
    counts = {str(name): int(n) for name, n in rows}
    assert {name: counts.get(name) for name in names} == dict.fromkeys(names, 1)
    assert counts.get("u1") == 1  # the user's own entity too
