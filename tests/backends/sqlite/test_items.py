"""The engine's namespaced items (``backends/sqlite/items.py``) below any framework: a file
from before the items table gains it on open, a batch is one transaction, and vectors of
another embedder are never compared with a query's."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from backends.sqlite import SQLiteBackend
from nams_local.backend import SupportsItems
from nams_local.embeddings import HashingEmbedder
from nams_local.errors import InvalidInputError
from nams_local.items import ItemGet, ItemListNamespaces, ItemPut, ItemSearch, StoredItem


async def test_a_file_from_before_items_gains_the_table(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    async with SQLiteBackend(path, embeddings=False, extraction="off") as backend:
        conversation = await backend.create_conversation("alex")
        await backend.add_message(conversation.id, "user", "hello")
    with sqlite3.connect(path) as raw:  # what an earlier nams-local wrote: no item tables
        raw.execute("DROP TABLE store_items")
        raw.execute("DROP TABLE store_items_fts")
    async with SQLiteBackend(path, embeddings=False, extraction="off") as backend:
        assert isinstance(backend, SupportsItems)
        await backend.item_batch([ItemPut(("n",), "k", {"text": "tea"}, text="tea")])
        got = await backend.item_batch([ItemGet(("n",), "k"), ItemSearch(("n",), query="tea")])
        assert isinstance(got[0], StoredItem) and got[0].value == {"text": "tea"}
        hits = got[1]
        assert isinstance(hits, list)
        assert [i.key for i in hits if isinstance(i, StoredItem)] == ["k"]
        assert len(await backend.list_messages(conversation.id)) == 1  # the old data is intact


async def test_a_batch_is_one_transaction_in_order(engine: SQLiteBackend) -> None:
    results = await engine.item_batch(
        [
            ItemPut(("a",), "1", {"v": 1}),
            ItemGet(("a",), "1"),
            ItemPut(("a",), "1", None),
            ItemGet(("a",), "1"),
            ItemListNamespaces(),
        ]
    )
    assert isinstance(results[1], StoredItem) and results[3] is None and results[4] == []
    with pytest.raises(InvalidInputError, match="limit"):
        await engine.item_batch([ItemPut(("a",), "2", {"v": 2}), ItemSearch(("a",), limit=-1)])
    assert await engine.item_batch([ItemGet(("a",), "2")]) == [None]


async def test_vectors_of_another_embedder_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "vectors.db"
    async with SQLiteBackend(path, embedder=HashingEmbedder(64), extraction="off") as backend:
        await backend.item_batch([ItemPut(("n",), "old", {"t": "green tea"}, text="green tea")])
    async with SQLiteBackend(path, embedder=HashingEmbedder(32), extraction="off") as backend:
        await backend.item_batch([ItemPut(("n",), "new", {"t": "black tea"}, text="black tea")])
        (hits,) = await backend.item_batch([ItemSearch(("n",), query="green tea")])
    assert isinstance(hits, list)
    # the old item still ranks by its words; the new one has a vector score as well
    assert [i.key for i in hits if isinstance(i, StoredItem)] == ["old", "new"]
