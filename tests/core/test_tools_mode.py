"""Tools mode: ``query_memory`` and ``store_memory`` on the real SQLite engine (§5.1–§5.3)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from pydantic import ValidationError

from backends.sqlite import SQLiteBackend
from nams_local import Capabilities, FeedbackResult, Scope, create_nams
from nams_local.integrations import (
    MemoryConfig,
    MemoryToolSet,
    ScriptedChatModel,
    build_memory_tools,
)
from nams_local.integrations.memory_tools import js_number
from tests.recording_logger import RecordingLogger

from .wrappers import Faulty, Wrapper

QUERY_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "Keywords or phrase to search in memory"},
        "limit": {"default": 5, "type": "integer", "minimum": 1, "maximum": 20},
    },
    "required": ["query"],
    "additionalProperties": False,
}

STORE_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {
        "content": {
            "type": "string",
            "minLength": 1,
            "maxLength": 2000,
            "description": "The information to remember",
        },
        "type": {
            "type": "string",
            "enum": ["fact", "interaction", "pattern", "user_preference"],
            "description": (
                "fact=persistent knowledge | interaction=conversation event | "
                "pattern=recurring behaviour | user_preference=explicit setting"
            ),
        },
        "confidence": {
            "default": 0.7,
            "description": (
                "Confidence 0–1: 0.8–1.0 very high · 0.6–0.8 high · 0.3–0.6 medium · 0–0.3 low"
            ),
            "type": "number",
            "minimum": 0,
            "maximum": 1,
        },
        "tags": {
            "default": [],
            "maxItems": 10,
            "type": "array",
            "items": {"type": "string", "maxLength": 40},
        },
    },
    "required": ["content", "type"],
    "additionalProperties": False,
}

QUERY_DESCRIPTION = (
    "Search NAMS (Neo4j Agent Memory System) for context relevant to the current message. "
    'Call this before answering, every turn. A result whose source is "graph" is a stored '
    "relationship, written (subject)-[RELATIONSHIP]->(object)."
)
STORE_DESCRIPTION = (
    "Persist important information to NAMS (Neo4j graph). Call this BEFORE giving your "
    "final answer whenever the conversation contains facts, preferences, or patterns worth "
    "remembering. Store only NEW information the user supplied in this conversation. Never "
    "store what query_memory returned, or a summary of what you remember — that is already "
    "stored, and re-storing it degrades recall."
)


class FeedbackRecorder(Wrapper):
    """The engine, remembering every feedback call."""

    def __init__(self, inner: Any, *, by_name: bool = True) -> None:
        super().__init__(inner)
        self.feedback: list[tuple[str, float | None, bool | None]] = []
        self.by_name = by_name

    @property
    def capabilities(self) -> Capabilities:
        return dataclasses.replace(super().capabilities, entity_by_name=self.by_name)

    async def entity_feedback(
        self, entity_id: str, user_score: float | None = None, confirmed: bool | None = None
    ) -> FeedbackResult:
        self.feedback.append((entity_id, user_score, confirmed))
        result: FeedbackResult = await self.inner.entity_feedback(entity_id, user_score, confirmed)
        return result


def tools_for(backend: Any, logger: RecordingLogger, user: str = "u1") -> MemoryToolSet:
    return build_memory_tools(backend, MemoryConfig(logger=logger), Scope(user))


def test_definitions_are_the_providers_exactly(engine: SQLiteBackend) -> None:
    tools = create_nams(engine).tools({"user_id": "u1"})
    assert list(tools) == ["query_memory", "store_memory"]
    assert tools["query_memory"].definition() == {
        "type": "function",
        "function": {
            "name": "query_memory",
            "description": QUERY_DESCRIPTION,
            "parameters": QUERY_SCHEMA,
        },
    }
    assert tools["store_memory"].description == STORE_DESCRIPTION
    assert tools["store_memory"].parameters == STORE_SCHEMA


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.7, "0.7"), (1.0, "1"), (0.85, "0.85"), (0.0, "0"), (1e-7, "1e-7"), (0.00001, "0.00001")],
)
def test_confidence_prints_like_a_javascript_number(value: float, text: str) -> None:
    assert js_number(value) == text


async def test_invalid_arguments_raise_before_touching_memory(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    tools = tools_for(engine, logger)
    for bad in (
        {"content": "", "type": "fact"},
        {"content": "x", "type": "opinion"},
        {"content": "x", "type": "fact", "confidence": 1.5},
        {"content": "x", "type": "fact", "tags": ["t"] * 11},
        {"content": "x", "type": "fact", "extra": 1},
    ):
        with pytest.raises(ValidationError):
            await tools["store_memory"].run(bad)
    for limit in (21, 2.5, "5", True):
        with pytest.raises(ValidationError):
            await tools["query_memory"].run({"query": "x", "limit": limit})
    assert await engine.list_entities() == []
    assert await engine.list_conversations() == []


async def test_a_fact_becomes_one_entity_with_feedback_and_tags(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    backend = FeedbackRecorder(engine)
    tools = tools_for(backend, logger)

    answer = await tools["store_memory"].run(
        {"content": "Alex  works at\nTechCorp", "type": "fact", "tags": ["work", "a,b"]}
    )
    again = await tools["store_memory"].run(
        {"content": "Alex works at TechCorp", "type": "fact", "confidence": 0.9}
    )

    assert answer == {
        "stored": True,
        "type": "fact",
        "preview": "Alex  works at\nTechCorp",
        "message": "Memory stored (fact, confidence=0.7)",
    }
    assert again["message"] == "Memory stored (fact, confidence=0.9)"
    [entity] = await engine.list_entities()
    assert (entity.name, entity.type) == ("Alex works at TechCorp", "fact")
    assert entity.description == "Alex  works at\nTechCorp"
    assert entity.properties == {"tags": '["work","a,b"]'}
    assert backend.feedback == [(entity.id, 0.7, False), (entity.id, 0.9, True)]


async def test_reuse_by_search_needs_the_exact_name_and_type(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    backend = FeedbackRecorder(engine, by_name=False)
    tools = tools_for(backend, logger)
    await tools["store_memory"].run({"content": "Prefers dark mode", "type": "user_preference"})
    await tools["store_memory"].run({"content": "prefers DARK mode ", "type": "user_preference"})
    await tools["store_memory"].run({"content": "Prefers dark mode", "type": "pattern"})
    await tools["store_memory"].run({"content": "Prefers dark", "type": "pattern"})

    found = sorted((e.type, e.name) for e in await engine.list_entities())
    assert found == [
        ("pattern", "Prefers dark"),
        ("pattern", "Prefers dark mode"),
        ("user_preference", "Prefers dark mode"),
    ]
    assert backend.calls["search_entities"] == 4


async def test_long_content_is_cut_for_the_name_and_the_preview(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    content = "word " * 30
    answer = await tools_for(engine, logger)["store_memory"].run(
        {"content": content, "type": "pattern"}
    )
    assert answer["preview"] == content[:80]
    [entity] = await engine.list_entities()
    assert entity.name == content.strip()[:60] + "…"
    assert entity.description == content


async def test_an_interaction_is_a_short_term_assistant_message(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    tools = tools_for(engine, logger)
    await tools["store_memory"].run({"content": "We talked about tea.", "type": "interaction"})
    [conversation] = await engine.list_conversations(user_id="u1")
    [message] = await engine.list_messages(conversation.id)
    assert (message.role, message.content) == ("assistant", "We talked about tea.")
    assert await engine.list_entities(type="interaction") == []


async def test_query_memory_answers_found_and_not_found(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    tools = tools_for(engine, logger)
    await tools["store_memory"].run({"content": "Alex drinks green tea", "type": "fact"})
    assert await tools["query_memory"].run({"query": "quantum chromodynamics"}) == {
        "found": False,
        "message": "No relevant memories found.",
        "memories": [],
    }
    found = await tools["query_memory"].run({"query": "What does Alex drink?"})
    assert found["found"] is True
    assert found["count"] == len(found["memories"]) >= 1
    assert found["memories"][0]["source"] == "long-term"
    assert "Alex drinks green tea" in found["memories"][0]["content"]
    # JSON has one number type: an integral float is a valid limit, as for zod's int().
    one = await tools["query_memory"].run({"query": "What does Alex drink?", "limit": 1.0})
    assert (one["found"], one["count"]) == (True, 1)


async def test_failures_answer_with_the_failure_shapes(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    broken = Faulty(
        engine,
        {"list_conversations": "raise", "create_conversation": "raise", "add_entity": "raise"},
    )
    tools = tools_for(broken, logger)
    assert await tools["query_memory"].run({"query": "tea"}) == {
        "found": False,
        "message": "Memory lookup failed.",
        "memories": [],
    }
    assert await tools["store_memory"].run({"content": "Likes tea", "type": "fact"}) == {
        "stored": False,
        "type": "fact",
        "preview": "Likes tea",
        "message": "Failed to store memory.",
    }
    errors = [m for level, m, _ in logger.records if level == "error"]
    assert errors == ["query_memory failed", "store_memory failed"]


async def test_each_tools_call_has_its_own_client_and_conversation(
    engine: SQLiteBackend,
) -> None:
    nams = create_nams(engine)
    first, second = nams.tools({"user_id": "u1"}), nams.tools({"user_id": "u1"})
    assert first is not second
    assert first["store_memory"] is not second["store_memory"]
    await first["store_memory"].run({"content": "one", "type": "interaction"})
    await second["store_memory"].run({"content": "two", "type": "interaction"})
    explicit = await engine.create_conversation(user_id="u1")
    pinned = nams.tools(Scope("u1", conversation_id=explicit.id))
    await pinned["store_memory"].run({"content": "three", "type": "interaction"})
    await first["store_memory"].run({"content": "four", "type": "interaction"})
    conversations = await engine.list_conversations(user_id="u1")
    assert len(conversations) == 2  # first stays on its own
    latest = next(c for c in conversations if c.id != explicit.id)
    assert [m.content for m in await engine.list_messages(latest.id)] == ["four", "two", "one"]
    assert [m.content for m in await engine.list_messages(explicit.id)] == ["three"]


async def test_extraction_model_outside_tools_mode_warns_once_per_instance(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    extractor = ScriptedChatModel([])
    nams = create_nams(engine, extraction_model=extractor, logger=logger)
    nams.wrap(ScriptedChatModel([]), {"user_id": "u1"})
    nams.middleware({"user_id": "u1"})
    nams.tools({"user_id": "u1"})
    assert logger.warnings == [
        "extractionModel is ignored in middleware mode — NAMS extracts persisted turns "
        "server-side. It applies to .tools()/.toolsWithMcp() only."
    ]
    plain = RecordingLogger()
    create_nams(engine, logger=plain).wrap(ScriptedChatModel([]), {"user_id": "u1"})
    assert plain.records == []


async def test_extraction_model_in_hooks_mode_warns_with_its_mode(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    nams = create_nams(engine, extraction_model=ScriptedChatModel([]), logger=logger)
    nams.hooks({"user_id": "u1"})
    nams.wrap(ScriptedChatModel([]), {"user_id": "u1"})
    assert logger.warnings == [
        "extractionModel is ignored in hooks mode — NAMS extracts persisted turns "
        "server-side. It applies to .tools()/.toolsWithMcp() only."
    ]
