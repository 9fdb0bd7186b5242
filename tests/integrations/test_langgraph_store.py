"""``NamsStore`` against LangGraph's own ``InMemoryStore``: the same long random sequence of
operations gives the same answers, the file keeps them, search ranks, TTLs expire, hostile
input is refused whole, and ``langmem``'s memory tools run on it."""

from __future__ import annotations

import json
import random
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import BaseStore, GetOp, Item, PutOp
from langgraph.store.memory import InMemoryStore

from backends.sqlite import SQLiteBackend
from nams_local.embeddings import HashingEmbedder
from nams_local.errors import InvalidInputError
from nams_local.integrations.langgraph import NamsStore

NAMESPACES = [("a",), ("a", "x"), ("a", "y"), ("b",), ("b", "x", "1"), ("c", "x")]
KEYS = ["k1", "k2", "k3", "k4"]
COLOURS = ["red", "green", "blue"]


def _backend(path: Path | str) -> SQLiteBackend:
    return SQLiteBackend(path, embedder=HashingEmbedder(), extraction="off")


@pytest.fixture
async def store_file(tmp_path: Path) -> AsyncIterator[tuple[NamsStore, Path]]:
    path = tmp_path / "store.db"
    async with _backend(path) as backend:
        yield NamsStore(backend), path


def _value(rng: random.Random) -> dict[str, Any]:
    value: dict[str, Any] = {
        "colour": rng.choice(COLOURS),
        "n": rng.randint(0, 9),
        "text": " ".join(rng.choice(["pizza", "tea", "hiking", "jazz"]) for _ in range(3)),
    }
    if rng.random() < 0.5:
        value["nested"] = {"a": rng.randint(0, 2), "tags": rng.sample(COLOURS, 2)}
    return value


def _filter(rng: random.Random) -> dict[str, Any] | None:
    return rng.choice(
        [
            None,
            {"colour": rng.choice(COLOURS)},
            {"n": {"$gt": rng.randint(0, 9)}},
            {"n": {"$lte": rng.randint(0, 9)}, "colour": {"$ne": rng.choice(COLOURS)}},
            {"nested": {"a": rng.randint(0, 2)}},
        ]
    )


def _keyed(items: list[Any]) -> list[tuple[tuple[str, ...], str, str]]:
    return sorted((i.namespace, i.key, json.dumps(i.value, sort_keys=True)) for i in items)


def _live_namespaces(model: dict[tuple[tuple[str, ...], str], dict[str, Any]]) -> set[Any]:
    return {ns for ns, _ in model}


async def _compare_step(
    rng: random.Random,
    ours: NamsStore,
    theirs: InMemoryStore,
    model: dict[tuple[tuple[str, ...], str], dict[str, Any]],
) -> None:
    ns, key = rng.choice(NAMESPACES), rng.choice(KEYS)
    roll = rng.random()
    if roll < 0.35:
        value = _value(rng)
        await ours.aput(ns, key, value)
        theirs.put(ns, key, value)
        model[(ns, key)] = value
    elif roll < 0.45:
        await ours.adelete(ns, key)
        theirs.delete(ns, key)
        model.pop((ns, key), None)
    elif roll < 0.65:
        mine, expected = await ours.aget(ns, key), theirs.get(ns, key)
        assert (mine is None) == (expected is None), (ns, key)
        if mine is not None and expected is not None:
            assert (mine.namespace, mine.key, mine.value) == (
                expected.namespace,
                expected.key,
                expected.value,
            )
    elif roll < 0.9:
        prefix = rng.choice([(), ("a",), ("b",), ("a", "x"), ("c",), ("z",)])
        flt = _filter(rng)
        everything = await ours.asearch(prefix, filter=flt, limit=1000)
        assert _keyed(everything) == _keyed(theirs.search(prefix, filter=flt, limit=1000))
        limit, offset = rng.randint(1, 4), rng.randint(0, 6)
        page = await ours.asearch(prefix, filter=flt, limit=limit, offset=offset)
        assert _keyed(page) == _keyed(everything[offset : offset + limit])
        assert len(page) == len(theirs.search(prefix, filter=flt, limit=limit, offset=offset))
    else:
        options: list[tuple[str, ...] | None] = [None, ("a",), ("b", "*"), ("*", "x")]
        match_prefix = rng.choice(options)
        suffix = rng.choice([None, ("x",), ("1",)])
        depth = rng.choice([None, 1, 2])
        mine_ns = await ours.alist_namespaces(
            prefix=match_prefix, suffix=suffix, max_depth=depth, limit=1000
        )
        # InMemoryStore also lists namespaces that no longer hold an item (or were only
        # read): compare with the ones that hold one.
        live = _live_namespaces(model)
        expected_ns = [
            ns
            for ns in theirs.list_namespaces(
                prefix=match_prefix, suffix=suffix, max_depth=depth, limit=1000
            )
            if any(n[: len(ns)] == ns for n in live) and (depth is not None or ns in live)
        ]
        assert mine_ns == expected_ns
        assert (
            await ours.alist_namespaces(
                prefix=match_prefix, suffix=suffix, max_depth=depth, limit=2, offset=1
            )
            == mine_ns[1:3]
        )


async def test_random_operations_match_in_memory_store(
    store_file: tuple[NamsStore, Path],
) -> None:
    ours, path = store_file
    theirs = InMemoryStore()
    model: dict[tuple[tuple[str, ...], str], dict[str, Any]] = {}
    rng = random.Random(17)
    for _ in range(600):
        await _compare_step(rng, ours, theirs, model)
    assert model, "the sequence wrote something"
    before = _keyed(await ours.asearch((), limit=1000))
    assert before == _keyed(theirs.search((), limit=1000))
    # the fixture's backend is still open: a second one on the same file sees it all
    async with _backend(path) as reopened:
        again = await NamsStore(reopened).asearch((), limit=1000)
    assert _keyed(again) == before
    assert sorted((ns, k) for ns, k in model) == [(i[0], i[1]) for i in before]


async def test_reopened_file_returns_same_items_with_times(tmp_path: Path) -> None:
    path = tmp_path / "again.db"
    async with _backend(path) as backend:
        store = NamsStore(backend)
        await store.aput(("docs",), "one", {"text": "first"})
        await store.aput(("docs",), "one", {"text": "second"})
        first = await store.aget(("docs",), "one")
    async with _backend(path) as backend:
        second = await NamsStore(backend).aget(("docs",), "one")
    assert first is not None and second is not None
    assert second.value == {"text": "second"}
    assert (second.created_at, second.updated_at) == (first.created_at, first.updated_at)
    assert second.created_at < second.updated_at  # an update keeps the creation time


def test_sync_methods_run_on_the_background_loop(tmp_path: Path) -> None:
    backend = _backend(tmp_path / "sync.db")
    try:
        store: BaseStore = NamsStore(backend)
        store.put(("s",), "k", {"text": "sync works"})
        got = store.get(("s",), "k")
        assert isinstance(got, Item) and got.value == {"text": "sync works"}
        assert store.list_namespaces() == [("s",)]
        store.delete(("s",), "k")
        assert store.get(("s",), "k") is None
    finally:
        from nams_local.integrations.sync import shared_loop

        shared_loop().run(backend.aclose())


async def test_search_ranks_by_meaning_and_words(store_file: tuple[NamsStore, Path]) -> None:
    store, _ = store_file
    await store.aput(("m", "alice"), "1", {"text": "Alice drinks green tea every morning"})
    await store.aput(("m", "alice"), "2", {"text": "Alice's dog is called Rex"})
    await store.aput(("m", "alice"), "3", {"text": "the tea kettle"}, index=False)
    await store.aput(("m", "bob"), "4", {"text": "Bob drinks green tea too"})
    hits = await store.asearch(("m", "alice"), query="what does alice drink? tea")
    assert [h.key for h in hits] == ["1", "2", "3"]
    assert hits[0].score is not None and hits[0].score > 0
    assert hits[-1].score is None  # not indexed: listed after the ranked ones
    only = await store.asearch(("m", "alice"), query="tea", filter={"text": {"$ne": "x"}}, limit=1)
    assert [h.key for h in only] == ["1"]


async def test_index_fields_choose_what_is_searched(store_file: tuple[NamsStore, Path]) -> None:
    store, _ = store_file
    await store.aput(("f",), "a", {"title": "volcano", "body": "ocean"}, index=["title"])
    await store.aput(("f",), "b", {"title": "ocean", "body": "volcano"}, index=["title"])
    hits = await store.asearch(("f",), query="volcano")
    assert hits[0].key == "a"


async def test_ttl_expires_items_and_reads_refresh(store_file: tuple[NamsStore, Path]) -> None:
    store, _ = store_file
    # one batch, one clock: the item is there when it is written, whatever the machine's load
    written = await store.abatch(
        [PutOp(("t",), "short", {"v": 1}, ttl=0.002), GetOp(("t",), "short")]  # 0.12 s
    )
    assert isinstance(written[1], Item) and written[1].value == {"v": 1}
    await store.aput(("t",), "kept", {"v": 2})
    deadline = time.monotonic() + 10
    while await store.aget(("t",), "short", refresh_ttl=False) is not None:
        assert time.monotonic() < deadline, "the item never expired"
    assert [i.key for i in await store.asearch(("t",))] == ["kept"]
    assert await store.alist_namespaces() == [("t",)]


async def test_hostile_batches_are_refused_whole(store_file: tuple[NamsStore, Path]) -> None:
    store, _ = store_file
    deep: dict[str, Any] = {}
    cursor = deep
    for _ in range(40):
        cursor["d"] = {}
        cursor = cursor["d"]
    with pytest.raises(InvalidInputError, match="deeper"):
        await store.abatch([PutOp(("h",), "ok", {"v": 1}), PutOp(("h",), "bad", deep)])
    assert await store.aget(("h",), "ok") is None  # nothing of the batch was written
    with pytest.raises(InvalidInputError):
        await store.aput(("h",), "big", {"v": "x" * (1 << 21)})
    with pytest.raises(InvalidInputError):
        await store.asearch(("h",), limit=10**6)
    with pytest.raises(InvalidInputError):
        await store.aput(tuple(f"l{n}" for n in range(40)), "k", {"v": 1})
    with pytest.raises(ValueError):
        await store.aput(("a.b",), "k", {"v": 1})  # LangGraph's own label rule


async def test_workspaces_do_not_see_each_other(tmp_path: Path) -> None:
    async with _backend(tmp_path / "ws.db") as backend:
        other = backend.for_workspace("other")
        try:
            await NamsStore(backend).aput(("m",), "k", {"text": "secret tea"})
            theirs = NamsStore(other)
            assert await theirs.aget(("m",), "k") is None
            assert await theirs.asearch((), query="secret tea") == []
            assert await theirs.alist_namespaces() == []
        finally:
            await other.aclose()


def test_a_backend_without_items_is_refused() -> None:
    with pytest.raises(TypeError, match="SupportsItems"):
        NamsStore(object())


async def test_langmem_memory_tools_work_on_the_store(
    store_file: tuple[NamsStore, Path],
) -> None:
    from langmem import create_manage_memory_tool, create_search_memory_tool

    store, _ = store_file
    namespace = ("memories", "alice")
    manage = create_manage_memory_tool(namespace, store=store)
    search = create_search_memory_tool(namespace, store=store)
    created = await manage.ainvoke({"content": "Alice is allergic to peanuts", "action": "create"})
    assert "created memory" in str(created)
    await manage.ainvoke({"content": "Alice plays the cello", "action": "create"})
    found = await search.ainvoke({"query": "peanut allergy"})
    memories = json.loads(found) if isinstance(found, str) else found
    assert memories[0]["value"]["content"] == "Alice is allergic to peanuts"
    memory_id = memories[0]["key"]
    await manage.ainvoke({"action": "delete", "id": memory_id})
    left = await store.asearch(namespace)
    assert [i.value["content"] for i in left] == ["Alice plays the cello"]
