"""One call per turn (``SupportsTurns``): the same memories as source by source, for less.

The local engine answers a turn's first round of retrieval in one ``recall_turn`` and
writes a step's two messages in one ``persist_turn``. These tests hold it to that: the
hits are exactly those of the provider's source-by-source path (the wrapper hides the turn
methods to get it), the first round is one call with the query embedded once, and a
failure of the one call costs a warning, not the memories.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from backends.sqlite import SQLiteBackend
from nams_local import NewMessage
from nams_local.backend import SupportsTurns
from nams_local.embeddings import HashingEmbedder, QueryStart, Vector, WrappedEmbedder
from nams_local.persistence import persist_step
from nams_local.retrieval import RetrievalOptions, retrieve_memories
from nams_local.scope import Scope
from tests.recording_logger import RecordingLogger

from .wrappers import Faulty, Wrapper

USER = Scope(user_id="alex")
FIRST_ROUND = ("search_messages", "search_entities", "list_steps", "search_user_messages")


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, counting the query embeddings it computes (cache misses),
    whether it computes them itself or a store's batcher does (``query_future``)."""

    def __init__(self) -> None:
        super().__init__()
        self.queries: list[str] = []
        self._counting = threading.Lock()

    def query_future(self, text: str, start: QueryStart | None = None) -> Future[Vector]:
        with self._counting:
            before = self.query_cache_info().misses
            future = super().query_future(text, start)
            if self.query_cache_info().misses > before:
                self.queries.append(text)
        return future


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteBackend]:
    """A file store (reader threads, as users run it) with vectors, extraction off."""
    async with SQLiteBackend(
        tmp_path / "turns.db", embedder=CountingEmbedder(), extraction="off"
    ) as backend:
        yield backend


async def _memory(backend: SQLiteBackend) -> str:
    """Two conversations of alex, entities with edges, reasoning steps; the newer one's id."""
    older = await backend.create_conversation("alex")
    await backend.add_messages(
        older.id,
        [
            NewMessage(role="user", content="I moved to Bangalore in May."),
            NewMessage(role="assistant", content="Bangalore has lovely weather."),
            NewMessage(role="user", content="My sister Priya lives in Chennai."),
        ],
    )
    await backend.record_step(older.id, "Alex lives in Bangalore", "direct response")
    current = await backend.create_conversation("alex")
    await backend.add_messages(
        current.id,
        [
            NewMessage(role="user", content="I write Python at work, mostly FastAPI."),
            NewMessage(role="assistant", content="FastAPI is a good fit for that."),
        ],
    )
    await backend.record_step(current.id, "Alex writes Python", "direct response")
    alex = await backend.add_entity("Alex", "person", "the user (me)")
    bangalore = await backend.add_entity("Bangalore", "place", "a city in India")
    python = await backend.add_entity("Python", "tool", "a programming language")
    await backend.add_relationship(alex.id, bangalore.id, "LIVES_IN")
    await backend.add_relationship(alex.id, python.id, "USES")
    return current.id


QUESTIONS = (
    "Where do I live now?",
    "Which programming language do I use at work?",
    "Tell me about Priya and Chennai",
    "zzqxv-nothing-matches",
)


@pytest.mark.parametrize("question", QUESTIONS)
async def test_one_call_gives_the_hits_of_source_by_source(
    store: SQLiteBackend, logger: RecordingLogger, question: str
) -> None:
    conv = await _memory(store)
    options = RetrievalOptions(logger=logger)
    source_by_source = Wrapper(store)
    assert not isinstance(source_by_source, SupportsTurns)
    expected = await retrieve_memories(source_by_source, USER, conv, question, 6, options)
    turns = Wrapper(store, turns=True)
    assert isinstance(turns, SupportsTurns)
    got = await retrieve_memories(turns, USER, conv, question, 6, options)
    assert got == expected
    assert turns.calls["recall_turn"] == 1
    assert logger.records == []


async def test_the_first_round_is_one_call_with_the_query_embedded_once(
    store: SQLiteBackend, logger: RecordingLogger
) -> None:
    conv = await _memory(store)
    embedder: object = store.store.vectors.embedder if store.store.vectors else None
    while isinstance(embedder, WrappedEmbedder):  # the store's batcher wraps it
        embedder = embedder.inner
    assert isinstance(embedder, CountingEmbedder)
    embedder.queries.clear()
    backend = Wrapper(store, turns=True)
    question = "Where do I live now and what do I use at work?"
    hits = await retrieve_memories(
        backend, USER, conv, question, 6, RetrievalOptions(logger=logger)
    )
    assert any(h.source == "graph" for h in hits)  # expanded from the prefetched details
    assert backend.calls["recall_turn"] == 1
    assert not any(backend.calls[name] for name in (*FIRST_ROUND, "get_entity"))
    # The question once; "me" (the user's own entity) once, as source by source.
    assert sorted(embedder.queries) == sorted([question, "me"])


async def test_a_failing_recall_costs_a_warning_not_the_memories(
    store: SQLiteBackend, logger: RecordingLogger
) -> None:
    conv = await _memory(store)
    question = "Where do I live now?"
    expected = await retrieve_memories(
        Wrapper(store), USER, conv, question, 6, RetrievalOptions(logger=RecordingLogger())
    )
    broken: Any = Faulty(store, {"recall_turn": "raise"})
    broken.turns = True
    got = await retrieve_memories(broken, USER, conv, question, 6, RetrievalOptions(logger=logger))
    assert got == expected
    assert logger.warnings == ["recallTurn failed, searching source by source"]


async def test_a_hanging_recall_is_cut_off_by_the_timeout(
    store: SQLiteBackend, logger: RecordingLogger
) -> None:
    conv = await _memory(store)
    hanging: Any = Faulty(store, {"recall_turn": "timeout"})
    hanging.turns = True
    options = RetrievalOptions(logger=logger, lookup_timeout=0.2)
    assert await retrieve_memories(hanging, USER, conv, "Where do I live?", 6, options) == []
    assert logger.warnings == ["recallTurn failed"]


async def test_a_step_is_written_as_one_unit(store: SQLiteBackend, logger: RecordingLogger) -> None:
    conv = await store.create_conversation("alex")
    backend = Wrapper(store, turns=True)
    await persist_step(
        backend, conv.id, user_text="Hi there", assistant_text="Hello!", logger=logger
    )
    # One add_messages unit: one transaction, one commit for both (all or nothing).
    assert backend.calls["persist_turn"] == 1 and backend.calls["add_message"] == 0
    stored = await store.list_messages(conv.id)
    assert [(m.role, m.content) for m in reversed(stored)] == [
        ("user", "Hi there"),
        ("assistant", "Hello!"),
    ]
    assert logger.records == []


async def test_an_invalid_message_of_a_step_costs_only_itself(
    store: SQLiteBackend, logger: RecordingLogger
) -> None:
    conv = await store.create_conversation("alex")
    backend = Wrapper(store, turns=True)
    await persist_step(backend, conv.id, user_text="Hi there", assistant_text="   ", logger=logger)
    stored = await store.list_messages(conv.id)
    assert [(m.role, m.content) for m in stored] == [("user", "Hi there")]
    assert logger.warnings == ["persist assistant message failed"]
