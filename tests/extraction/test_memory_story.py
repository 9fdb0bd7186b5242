"""The seed story end to end: facts stated in one session come back in the next as
[long-term] and [graph] memories, and the self-reference trap leaves the graph clean."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from backends.sqlite import SQLiteBackend
from nams_local.backend import MemoryBackend
from nams_local.embeddings import default_embedder
from nams_local.retrieval import retrieve_memories
from nams_local.scope import Scope

SESSION_ONE = [
    ("user", "Hi! My name is Alex and I work at TechCorp."),
    ("assistant", "Nice to meet you, Alex."),
    ("user", "I live in Bangalore and I use Neovim every day."),
    ("assistant", "Bangalore and Neovim, noted."),
]


async def _two_sessions(backend: MemoryBackend, user: str = "alex") -> str:
    first = await backend.create_conversation(user_id=user)
    for role, content in SESSION_ONE:
        await backend.add_message(first.id, role, content)
    second = await backend.create_conversation(user_id=user)
    return second.id


async def test_facts_of_session_one_come_back_as_long_term_and_graph(
    backend: MemoryBackend,
) -> None:
    second = await _two_sessions(backend)
    hits = await retrieve_memories(
        backend, Scope("alex", second), second, "Where does Alex work?", limit=12
    )
    by_source = {(h.source, h.content) for h in hits}
    assert any(s == "long-term" and c.startswith("Alex") for s, c in by_source)
    assert ("graph", "(Alex)-[WORKS_AT]->(TechCorp)") in by_source
    assert ("graph", "(Alex)-[LIVES_IN]->(Bangalore)") in by_source


async def test_who_else_works_where_i_work_from_one_turns_triples(
    backend: MemoryBackend,
) -> None:
    colleagues = await backend.create_conversation(user_id="priya")
    await backend.add_message(colleagues.id, "user", "I'm Priya. I work at TechCorp too.")
    other = await backend.create_conversation(user_id="omar")
    await backend.add_message(other.id, "user", "My name is Omar and I work at Globex.")
    second = await _two_sessions(backend)

    hits = await retrieve_memories(
        backend, Scope("alex", second), second, "Who else works at TechCorp?", limit=12
    )
    triples = {h.content for h in hits if h.source == "graph"}
    assert "(Priya)-[WORKS_AT]->(TechCorp)" in triples
    assert "(Alex)-[WORKS_AT]->(TechCorp)" in triples
    assert not any("Omar" in t or "Globex" in t for t in triples)


TRAP_SUMMARY = (
    "Here is what I remember about you: your name is Alex and you live in Bangalore. "
    "My memory of your preferences and profile is up to date."
)


@pytest.fixture
async def real_engine() -> AsyncIterator[SQLiteBackend]:
    async with SQLiteBackend(":memory:", embedder=default_embedder()) as engine:
        yield engine


@pytest.mark.slow
async def test_the_self_reference_trap(real_engine: SQLiteBackend) -> None:
    """The seed's trap: the question and the assistant's own summary, five times over,
    create nothing about remembering, and Alex and Bangalore stay on top."""
    backend = real_engine
    first = await backend.create_conversation(user_id="alex")
    await backend.add_message(first.id, "user", "Hi, I'm Alex. I live in Bangalore.")
    await backend.add_message(first.id, "assistant", "Nice to meet you, Alex!")
    second = (await backend.create_conversation(user_id="alex")).id
    before = {(e.name, e.type) for e in await backend.list_entities()}
    assert before == {("Alex", "person"), ("Bangalore", "location")}
    for _ in range(5):
        await backend.add_message(second, "user", "What do you remember about me?")
        await backend.add_message(second, "assistant", TRAP_SUMMARY)
    assert {(e.name, e.type) for e in await backend.list_entities()} == before

    hits = await retrieve_memories(
        backend, Scope("alex", second), second, "What do you remember about me?", limit=12
    )
    long_term = [h.content for h in hits if h.source == "long-term"]
    assert [c.split(" —")[0] for c in long_term] == ["Alex", "Bangalore"]
    assert hits[0].source == "long-term" and hits[0].content.startswith("Alex")
    assert ("graph", "(Alex)-[LIVES_IN]->(Bangalore)") in {(h.source, h.content) for h in hits}
