"""A turn's SQL that needs no vector runs while the model embeds the query.

``recall_turn`` submits its two reader jobs as soon as it starts the query embedding; each
reads what needs no vector first (conversations, steps, full-text hits) and waits (bounded)
for the vector only for the vector searches. These tests hold the model on a gate, so "the
job started before the vector existed" is observed, not inferred from timings; a scope with
message vectors still queued keeps the old order (vectors first, then the transaction).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from backends.sqlite import (
    SQLiteBackend,
    conversation_vectors,
    conversations,
    entities,
    entity_snapshots,
    turns,
)
from backends.sqlite.store import Ctx
from backends.sqlite.vector_lane import conversation_key
from nams_local import NewMessage
from nams_local.embeddings import HashingEmbedder, Matrix
from nams_local.errors import BackendUnavailableError

from .turn_requests import USER, full_request

GATED = "gated"
DEADLINE = 10.0


class GateEmbedder(HashingEmbedder):
    """The hashing model, held for any text containing ``GATED`` until ``gate`` opens."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.waiting = threading.Event()

    def embed(self, texts: Sequence[str]) -> Matrix:
        if any(GATED in text for text in texts):
            self.waiting.set()
            assert self.gate.wait(DEADLINE), "the test never opened the gate"
        return super().embed(texts)


@pytest.fixture
async def gated(tmp_path: Path) -> AsyncIterator[tuple[SQLiteBackend, GateEmbedder, str]]:
    embedder = GateEmbedder()
    async with SQLiteBackend(tmp_path / "t.db", embedder=embedder, extraction="off") as backend:
        older = await backend.create_conversation(USER)
        await backend.add_messages(older.id, [NewMessage(role="user", content="I moved to Lima.")])
        current = await backend.create_conversation(USER)
        await backend.add_messages(
            current.id, [NewMessage(role="user", content="Lima sits between hills.")]
        )
        await backend.add_entity("Lima", "place", "a city in Peru")
        await backend.add_entity("Alex", "person", "the user (me)")
        lane = backend.store.vector_lane
        assert lane is not None
        await lane.drained()
        try:
            yield backend, embedder, current.id
        finally:
            embedder.gate.set()  # never leave the model thread held


async def _until(condition: threading.Event) -> None:
    assert await asyncio.to_thread(condition.wait, DEADLINE)


async def test_both_reader_jobs_run_at_once_while_the_model_runs(
    gated: tuple[SQLiteBackend, GateEmbedder, str],
) -> None:
    """The messages' and the entities' jobs are both on reader threads before the query
    vector exists (each then waits for it): they overlap each other and the model."""
    backend, embedder, conv = gated
    await backend.recall_turn(full_request(conv, "lima warm-up"))  # snapshots and "me" cached
    reads, units = backend.store.reads, backend.store.writer.units
    turn = asyncio.ensure_future(backend.recall_turn(full_request(conv, f"{GATED} lima")))
    await _until(embedder.waiting)
    deadline = asyncio.get_running_loop().time() + DEADLINE
    while backend.store.reads < reads + 2:  # both running with the model still held
        assert asyncio.get_running_loop().time() < deadline, "not both jobs while embedding"
        await asyncio.sleep(0.005)
    assert not turn.done()  # and it waits for the vector before its vector searches
    embedder.gate.set()
    recall = await asyncio.wait_for(turn, DEADLINE)
    assert backend.store.reads - reads == 2
    assert backend.store.writer.units - units == 0
    assert [m.content for m in recall.messages][:1] == ["Lima sits between hills."]
    assert [e.name for e in recall.entities][:1] == ["Lima"]
    assert recall.user is not None and recall.user.name == "Alex"
    assert [g.messages[0].content for g in recall.cross_session] == ["I moved to Lima."]


async def test_the_same_hits_as_with_the_vector_first(
    gated: tuple[SQLiteBackend, GateEmbedder, str],
) -> None:
    backend, embedder, conv = gated
    embedder.gate.set()
    overlapped = await backend.recall_turn(full_request(conv, "where is lima"))
    vector = await asyncio.to_thread(embedder.embed_query, "where is lima")
    mine = await asyncio.to_thread(embedder.embed_query, turns.USER_QUERY)
    request = full_request(conv, "where is lima")
    ready = turns.ready_vector(vector)
    weight = backend.hybrid_weight
    messages = await backend.store.read(
        turns.turn_message_reads, _ctx(backend), request, ready, "hybrid", weight
    )
    entities = await backend.store.read(
        turns.turn_entity_reads,
        _ctx(backend),
        request,
        ready,
        turns.ready_vector(mine),
        "hybrid",
        weight,
    )
    assert overlapped.messages == messages.messages
    assert overlapped.entities == entities.entities
    assert overlapped.user == entities.user
    assert overlapped.cross_session == messages.cross_session


async def test_a_stuck_model_fails_the_turn_within_the_bound(
    gated: tuple[SQLiteBackend, GateEmbedder, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    backend, embedder, conv = gated
    monkeypatch.setattr(turns, "QUERY_WAIT_SECONDS", 0.2)
    with pytest.raises(BackendUnavailableError, match="query embedding"):
        await asyncio.wait_for(backend.recall_turn(full_request(conv, f"{GATED} stuck")), DEADLINE)
    embedder.gate.set()
    recall = await backend.recall_turn(full_request(conv, "lima again"))  # the store still serves
    assert recall.messages


async def test_queued_message_vectors_are_embedded_before_the_transaction(
    gated: tuple[SQLiteBackend, GateEmbedder, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read-your-writes: with a message's vector still queued (held on the gate), the
    reader job starts only once it is written, so vector search sees it."""
    backend, embedder, conv = gated
    lane = backend.store.vector_lane
    assert lane is not None
    pending_at_read: list[bool] = []
    reads = turns.turn_message_reads

    def spy(*args: Any, **kwargs: Any) -> turns.TurnMessages:
        pending_at_read.append(lane.has_pending([conversation_key(conv)]))
        return reads(*args, **kwargs)

    monkeypatch.setattr(turns, "turn_message_reads", spy)
    await backend.add_messages(conv, [NewMessage(role="user", content=f"{GATED} Cusco in May")])
    turn = asyncio.ensure_future(backend.recall_turn(full_request(conv, "Cusco in May")))
    await _until(embedder.waiting)  # the message's vector is held
    embedder.gate.set()
    recall = await asyncio.wait_for(turn, DEADLINE)
    assert pending_at_read == [False]
    assert [m.content for m in recall.messages][:1] == [f"{GATED} Cusco in May"]


def _ctx(backend: SQLiteBackend) -> Ctx:
    return Ctx(backend.store, backend.workspace)


async def test_the_conversations_vectors_are_read_while_the_model_runs(
    gated: tuple[SQLiteBackend, GateEmbedder, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the products wait for the query vector: the rows of the conversations' message
    vectors are read while the model is still held."""
    backend, embedder, conv = gated
    read = conversation_vectors.read_conversations
    model_held: list[bool] = []

    def recording(*args: Any) -> Any:
        model_held.append(not embedder.gate.is_set())
        return read(*args)

    monkeypatch.setattr(conversations, "read_conversations", recording)
    turn = asyncio.ensure_future(backend.recall_turn(full_request(conv, f"{GATED} lima")))
    await _until(embedder.waiting)
    deadline = asyncio.get_running_loop().time() + DEADLINE
    while not model_held:
        assert asyncio.get_running_loop().time() < deadline, "no vectors read while embedding"
        await asyncio.sleep(0.005)
    embedder.gate.set()
    recall = await asyncio.wait_for(turn, DEADLINE)
    assert model_held == [True]
    assert [m.content for m in recall.messages][:1] == ["Lima sits between hills."]
    assert [g.messages[0].content for g in recall.cross_session] == ["I moved to Lima."]


async def test_the_entity_vector_search_runs_while_the_reader_is_in_its_text_sql(
    gated: tuple[SQLiteBackend, GateEmbedder, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the vector exists, the entity vector search runs on the model's thread at once,
    not after the reader's full-text SQL: here the reader is held inside the entity
    full-text query until the search has run."""
    backend, embedder, conv = gated
    await backend.recall_turn(full_request(conv, "lima warm-up"))  # snapshots loaded
    release_reader, reader_held = threading.Event(), threading.Event()
    text_hits = entities.entity_text_hits
    reader: list[str] = []

    def held(*args: Any) -> Any:
        if GATED not in str(args[1]):
            return text_hits(*args)
        reader.append(threading.current_thread().name)
        reader_held.set()
        assert release_reader.wait(DEADLINE), "the test never released the reader"
        return text_hits(*args)

    searched: list[tuple[str, bool]] = []
    search = entity_snapshots.EntitySnapshot.search

    def recording(self: entity_snapshots.EntitySnapshot, *args: Any) -> Any:
        searched.append((threading.current_thread().name, release_reader.is_set()))
        return search(self, *args)

    monkeypatch.setattr(turns, "entity_text_hits", held)
    monkeypatch.setattr(entity_snapshots.EntitySnapshot, "search", recording)
    turn = asyncio.ensure_future(backend.recall_turn(full_request(conv, f"{GATED} lima")))
    await _until(reader_held)
    await _until(embedder.waiting)
    embedder.gate.set()
    deadline = asyncio.get_running_loop().time() + DEADLINE
    while not searched:
        assert asyncio.get_running_loop().time() < deadline, "no search while the reader is held"
        await asyncio.sleep(0.005)
    release_reader.set()
    recall = await asyncio.wait_for(turn, DEADLINE)
    thread, after_release = searched[0]
    assert not after_release
    assert thread != reader[0], thread  # on the model's thread, beside the reader
    assert [e.name for e in recall.entities][:1] == ["Lima"]
