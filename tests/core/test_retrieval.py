"""Provider-behavior §3: the five sources, fallback, graph, de-duplication, round-robin."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from backends.sqlite import SQLiteBackend
from nams_local import Capabilities, NewMessage
from nams_local.retrieval import MemoryHit, RetrievalOptions, retrieve_memories
from nams_local.scope import Scope
from tests.recording_logger import RecordingLogger

from .wrappers import ContainsSearch, Wrapper

USER = Scope(user_id="alex")


async def _conversation(backend: Any, *texts: str, user: str = "alex") -> str:
    conv = await backend.create_conversation(user)
    if texts:
        await backend.add_messages(conv.id, [NewMessage(role="user", content=t) for t in texts])
    return str(conv.id)


def _opts(logger: RecordingLogger, **kw: Any) -> RetrievalOptions:
    return RetrievalOptions(logger=logger, **kw)


async def test_whole_query_hits_are_returned_unchanged(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    backend = ContainsSearch(engine)
    conv = await _conversation(backend, "I use Neovim daily", "Neovim is my editor")
    hits = await retrieve_memories(backend, USER, conv, "Neovim", 5, _opts(logger))
    assert [h.content for h in hits] == ["I use Neovim daily", "Neovim is my editor"]
    assert {h.source for h in hits} == {"conversation"}
    assert backend.calls["search_messages"] == 1  # no fallback when pass 1 found something


async def test_fallback_searches_terms_and_ranks_by_overlap(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    backend = ContainsSearch(engine)
    conv = await _conversation(
        backend,
        "My sister lives far away",
        "Priya is my sister and she works as a nurse",
        "Priya called yesterday",
    )
    hits = await retrieve_memories(
        backend, USER, conv, "What does Priya's sister do?", 5, _opts(logger)
    )
    # pass 1 (whole question) finds nothing; terms: sister, Sister, Priya, What, does, Does
    contents = [h.content for h in hits]
    assert contents[0] == "Priya is my sister and she works as a nurse"  # overlap 3
    assert set(contents) == {
        "My sister lives far away",
        "Priya is my sister and she works as a nurse",
        "Priya called yesterday",
    }
    assert backend.calls["search_messages"] == 1 + 6


async def test_entity_hits_and_alias_deduplication(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    backend = ContainsSearch(engine)
    conv = await _conversation(backend, "software engineer")
    await engine.add_entity("Alex", "Person", "software engineer")
    await engine.add_entity("Alexandria", "Location", "")
    hits = await retrieve_memories(backend, USER, conv, "Alex", 5, _opts(logger))
    long_term = [h for h in hits if h.source == "long-term"]
    assert [(h.content, h.type, h.score) for h in long_term] == [
        ("Alex — software engineer", "Person", 1.0),
        ("Alexandria", "Location", 1.0),
    ]
    # the message equal to the entity description is suppressed by the alias key
    assert "software engineer" not in [h.content for h in hits]


async def test_graph_hits_from_relationships(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    backend = ContainsSearch(engine)
    conv = await _conversation(backend)
    alex = await engine.add_entity("Alex", "Person")
    targets = [await engine.add_entity(f"Place{i}", "Location") for i in range(7)]
    for target in targets:
        await engine.add_relationship(alex.id, target.id, " LIVED_IN ")
    hits = await retrieve_memories(backend, USER, conv, "Alex", 12, _opts(logger))
    graph = [h for h in hits if h.source == "graph"]
    assert [h.content for h in graph] == [f"(Alex)-[LIVED_IN]->(Place{i})" for i in range(5)]
    assert {h.type for h in graph} == {"LIVED_IN"}


async def test_graph_expansion_limit_zero_makes_no_requests(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    backend = ContainsSearch(engine)
    conv = await _conversation(backend)
    alex = await engine.add_entity("Alex", "Person")
    corp = await engine.add_entity("TechCorp", "Organization")
    await engine.add_relationship(alex.id, corp.id, "WORKS_AT")
    opts = _opts(logger, graph_expansion_limit=0)
    hits = await retrieve_memories(backend, USER, conv, "Alex", 6, opts)
    assert not [h for h in hits if h.source == "graph"]
    assert backend.calls["get_entity"] == 0


async def test_reasoning_hits_are_direct_responses_only_first_six(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    backend = ContainsSearch(engine)
    conv = await _conversation(backend)
    for i in range(8):
        await engine.record_step(conv, f"answered question {i}", "direct response")
    await engine.record_step(conv, "looked something up", "tool call")
    hits = await retrieve_memories(backend, USER, conv, "zzz", 12, _opts(logger))
    assert [h.content for h in hits] == [f"answered question {i}" for i in range(6)]
    assert {(h.source, h.type) for h in hits} == {("reasoning", "step")}


async def _mixed(engine: SQLiteBackend) -> tuple[ContainsSearch, str]:
    backend = ContainsSearch(engine)
    old = await _conversation(backend, "tea fact from an older chat A", "tea fact older B")
    conv = await _conversation(backend, "tea in this chat 1", "tea in this chat 2")
    await engine.record_step(conv, "tea reasoning 1", "direct response")
    await engine.record_step(conv, "tea reasoning 2", "direct response")
    e1 = await engine.add_entity("tea", "Concept", "a drink")
    e2 = await engine.add_entity("tea shop", "Location", "near home")
    shop = await engine.add_entity("Chai Point", "Organization")
    await engine.add_relationship(e1.id, shop.id, "SOLD_AT")
    await engine.add_relationship(e2.id, shop.id, "NAMED")
    assert old != conv
    return backend, conv


@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        (0, []),
        (1, ["long-term"]),
        (
            13,
            [
                "long-term", "graph", "conversation", "cross-session", "reasoning",
                "long-term", "graph", "conversation", "cross-session", "reasoning",
            ],
        ),
        (6, ["long-term", "graph", "conversation", "cross-session", "reasoning", "long-term"]),
    ],
)  # fmt: skip
async def test_round_robin_order_and_caps(
    engine: SQLiteBackend, logger: RecordingLogger, limit: int, expected: list[str]
) -> None:
    backend, conv = await _mixed(engine)
    hits = await retrieve_memories(backend, USER, conv, "tea", limit, _opts(logger))
    assert [h.source for h in hits] == expected
    assert logger.records == []


async def test_cap_is_twelve(engine: SQLiteBackend, logger: RecordingLogger) -> None:
    backend = ContainsSearch(engine)
    conv = await _conversation(backend, *[f"tea note {i}" for i in range(20)])
    hits = await retrieve_memories(backend, USER, conv, "tea", 13, _opts(logger))
    assert len(hits) == 12


async def test_cross_session_order_follows_the_conversation_list(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    backend = ContainsSearch(engine)
    older = await _conversation(backend, "green tea from the oldest chat")
    newer = await _conversation(backend, "green tea from a newer chat")
    await engine.record_step(newer, "green tea reasoning", "direct response")
    other_user = await _conversation(backend, "green tea of someone else", user="bob")
    current = await _conversation(backend)
    hits = await retrieve_memories(backend, USER, current, "green tea", 12, _opts(logger))
    assert [(h.content, h.type) for h in hits] == [
        ("green tea from a newer chat", "message"),
        ("green tea reasoning", "reasoning"),
        ("green tea from the oldest chat", "message"),
    ]
    assert {h.source for h in hits} == {"cross-session"}
    assert older and other_user


async def test_cross_session_limit_zero_makes_no_requests(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    backend = ContainsSearch(engine)
    await _conversation(backend, "green tea elsewhere")
    current = await _conversation(backend)
    opts = _opts(logger, cross_session_limit=0)
    assert await retrieve_memories(backend, USER, current, "green tea", 6, opts) == []
    assert backend.calls["list_conversations"] == 0


async def test_one_call_cross_session_gives_the_same_hits_as_per_conversation(
    logger: RecordingLogger,
) -> None:
    async with SQLiteBackend(":memory:") as engine:  # default embedder, hybrid search
        for i, fact in enumerate(
            ["I moved to Bangalore last year", "My dog is called Bruno", "I work at TechCorp"]
        ):
            conv = await _conversation(engine, fact, f"filler line number {i}")
            await engine.record_step(conv, f"told the user about {fact}", "direct response")
        current = await _conversation(engine, "hello again")
        one_call = await retrieve_memories(
            engine, USER, current, "where do I live?", 12, _opts(logger)
        )

        per_conv_backend = NoUserSearch(engine)
        per_conversation = await retrieve_memories(
            per_conv_backend, USER, current, "where do I live?", 12, _opts(logger)
        )
    assert one_call == per_conversation
    assert [h for h in one_call if h.source == "cross-session"]
    assert logger.records == []


class NoUserSearch(Wrapper):
    """The same engine, seen as a backend without the one-call cross-session search."""

    @property
    def capabilities(self) -> Capabilities:
        return replace(super().capabilities, user_message_search=False)


def test_memory_hit_dict_omits_absent_score() -> None:
    assert MemoryHit("x", "graph", "T").as_dict() == {
        "content": "x",
        "source": "graph",
        "type": "T",
    }
