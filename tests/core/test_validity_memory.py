"""Facts that change, end to end through the core: the memory block shows what holds now,
and what held once only for questions about the past, with its interval; LLM extraction
and tools-mode graph extraction follow the same supersession rules."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from backends.sqlite import SQLiteBackend
from nams_local import Scope, create_nams
from nams_local.integrations import LLMExtractor, ScriptedChatModel
from nams_local.memory_block import GRAPH_NOTE, PAST_NOTE, format_memory_block
from nams_local.models import EntityGraph
from nams_local.retrieval import RetrievalOptions, retrieve_memories
from nams_local.retrieval_time import asks_about_past
from tests.recording_logger import RecordingLogger

USER = Scope(user_id="alex")
STORY = (
    "My name is Alex. Since March 2021 I have lived in Bangalore.",
    "I moved from Bangalore to Berlin in October 2026.",
)
OLD = "(Alex)-[LIVES_IN 2021-03..2026-10]->(Bangalore)"
NOW = "(Alex)-[LIVES_IN]->(Berlin)"


@pytest.fixture
async def told() -> AsyncIterator[tuple[SQLiteBackend, str]]:
    async with SQLiteBackend(":memory:", embeddings=False) as backend:
        conversation = await backend.create_conversation(user_id="alex")
        for text in STORY:
            await backend.add_message(conversation.id, "user", text)
        yield backend, conversation.id


async def _graph_lines(backend: SQLiteBackend, conversation: str, query: str) -> list[str]:
    options = RetrievalOptions(logger=RecordingLogger())
    hits = await retrieve_memories(backend, USER, conversation, query, 12, options)
    return [hit.content for hit in hits if hit.source == "graph"]


@pytest.mark.parametrize("query", ["Where does Alex live now?", "Tell me about Alex", "Alex"])
async def test_a_current_question_sees_only_what_holds(
    told: tuple[SQLiteBackend, str], query: str
) -> None:
    lines = await _graph_lines(*told, query)
    assert NOW in lines
    assert not any("Bangalore" in line for line in lines)


@pytest.mark.parametrize(
    "query",
    [
        "Where did Alex live before Berlin?",
        "Where did Alex use to live?",
        "Where was Alex in 2024?",
        "When did Alex move?",
    ],
)
async def test_a_past_question_sees_the_old_fact_with_its_interval(
    told: tuple[SQLiteBackend, str], query: str
) -> None:
    lines = await _graph_lines(*told, query)
    assert OLD in lines and NOW in lines
    assert "(Alex)-[LIVES_IN]->(Bangalore)" not in lines  # never as current


async def test_the_block_explains_a_dated_line(told: tuple[SQLiteBackend, str]) -> None:
    backend, conversation = told
    options = RetrievalOptions(logger=RecordingLogger())
    past = await retrieve_memories(
        backend, USER, conversation, "Where did Alex live before?", 12, options
    )
    block = format_memory_block(past)
    assert GRAPH_NOTE in block and PAST_NOTE in block
    now = await retrieve_memories(backend, USER, conversation, "Where does Alex live?", 12, options)
    assert PAST_NOTE not in format_memory_block(now)


@pytest.mark.parametrize(
    ("query", "past"),
    [
        ("where do I live now?", False),
        ("what's my job?", False),
        ("who is my manager", False),
        ("where did I work before Acme?", True),
        ("what did I use to drive", True),
        ("where was I living in 2024", True),
        ("wo habe ich früher gewohnt?", False),  # other languages: current facts, safe side
    ],
)
def test_what_counts_as_a_question_about_the_past(query: str, past: bool) -> None:
    assert asks_about_past(query) is past


def _names(graph: EntityGraph) -> dict[tuple[str, str, str], bool]:
    names = {node.id: node.name for node in graph.nodes}
    return {(names[e.source], e.type, names[e.target]): bool(e.current) for e in graph.edges}


def _llm_answer(relationships: list[dict[str, object]], *places: str) -> str:
    entities = [{"name": "Alex", "type": "person", "description": ""}]
    entities += [{"name": p, "type": "location", "description": ""} for p in places]
    return json.dumps({"entities": entities, "relationships": relationships})


async def test_llm_extractor_output_supersedes_and_ends() -> None:
    model = ScriptedChatModel(
        [
            _llm_answer([{"from": "Alex", "to": "Bangalore", "type": "LIVES_IN"}], "Bangalore"),
            _llm_answer([{"from": "Alex", "to": "Berlin", "type": "lives in"}], "Berlin"),
            _llm_answer([{"from": "Alex", "to": "Pune", "type": "FORMERLY_LIVED_IN"}], "Pune"),
            _llm_answer(
                [{"from": "Alex", "to": "Oslo", "type": "VISITED", "ended": True, "when": "2019"}],
                "Oslo",
            ),
        ]
    )
    async with SQLiteBackend(":memory:", embeddings=False, extractor=LLMExtractor(model)) as memory:
        conversation = await memory.create_conversation(user_id="alex")
        for text in ("one", "two", "three", "four"):
            await memory.add_message(conversation.id, "user", text)
        edges = _names(await memory.get_graph())
    assert edges == {
        ("Alex", "LIVES_IN", "Bangalore"): False,
        ("Alex", "LIVES_IN", "Berlin"): True,
        ("Alex", "LIVES_IN", "Pune"): False,
        ("Alex", "VISITED", "Oslo"): False,
    }


def _memory_answer(target: str, type_: str) -> str:
    return json.dumps(
        {
            "entities": [
                {"name": "Alex", "type": "person", "description": ""},
                {"name": target, "type": "organization", "description": ""},
            ],
            "relationships": [{"from": "Alex", "to": target, "type": type_}],
        }
    )


async def test_tools_mode_graph_extraction_supersedes(engine: SQLiteBackend) -> None:
    model = ScriptedChatModel(
        [
            _memory_answer("TechCorp", "WORKS_AT"),
            _memory_answer("Acme", "WORKS_AT"),
            _memory_answer("Initech", "PREVIOUSLY_WORKED_AT"),
        ]
    )
    tools = create_nams(engine, extraction_model=model, logger=RecordingLogger()).tools(USER)
    for content in ("Alex works at TechCorp", "Alex joined Acme", "Alex was at Initech"):
        await tools["store_memory"].run({"content": content, "type": "fact"})
    edges = _names(await engine.get_graph())
    assert edges == {
        ("Alex", "WORKS_AT", "TechCorp"): False,
        ("Alex", "WORKS_AT", "Acme"): True,
        ("Alex", "WORKS_AT", "Initech"): False,
    }
