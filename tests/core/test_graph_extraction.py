"""Graph extraction in tools mode (§6): a scripted extraction model, real backends.

On the local engine entities and edges are written; through the hosted REST client
(talking to the real server app in-process, with hosted NAMS's capabilities) edges are
refused and the single warning is logged.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from backends.hosted import HOSTED_CAPABILITIES, HostedBackend
from backends.sqlite import SQLiteBackend
from nams_local import Scope, create_nams
from nams_local.extraction import EntityCandidate
from nams_local.extraction.schema import memory_extraction_prompt, response_format
from nams_local.integrations import (
    ChatMessage,
    MemoryToolSet,
    ScriptedChatModel,
    ScriptedReply,
    ensure_memory_stored,
)
from nams_local.integrations.graph_extraction import (
    EXTRACTION_FAILED,
    EXTRACTION_FAILED_FIRST,
    RELATIONSHIP_WRITES_UNSUPPORTED,
)
from nams_local.server import create_app
from tests.asgi import hosted_in_process
from tests.recording_logger import RecordingLogger

from .wrappers import Faulty

ALEX_FACT = "Alex works at TechCorp in Berlin"
ALEX_OUTPUT = {
    "entities": [
        {"name": "Alex", "type": "person", "description": "A software engineer"},
        {"name": "TechCorp", "type": "organization", "description": " "},
        {"name": "Berlin", "type": "place", "description": "Capital of Germany"},
        {"name": "preferences", "type": "preference", "description": ""},
        {"name": "User Profiles", "type": "user profile", "description": ""},
    ],
    "relationships": [
        {"from": "Alex", "to": "TechCorp", "type": "WORKS_AT"},
        {"from": "TechCorp", "to": "Berlin", "type": "LOCATED_IN"},
        {"from": "Alex", "to": "preferences", "type": "HAS"},
        {"from": "Alex", "to": "Nobody", "type": "KNOWS"},
    ],
}


def answers(outputs: dict[str, Any]) -> Callable[[list[ChatMessage]], ScriptedReply]:
    """An extraction model answering per memory content (JSON text, or an exception)."""

    def reply(messages: list[ChatMessage]) -> ScriptedReply:
        prompt = messages[-1]["content"]
        content = prompt.split("): ", 1)[1]
        output = outputs[content]
        if isinstance(output, BaseException):
            return ScriptedReply(error=output)
        return ScriptedReply(text=output if isinstance(output, str) else json.dumps(output))

    return reply


def tools_with(
    backend: Any, model: ScriptedChatModel, logger: Any = None, **options: Any
) -> MemoryToolSet:
    config: dict[str, Any] = {"extraction_model": model, **options}
    if logger is not None:
        config["logger"] = logger
    return create_nams(backend, **config).tools(Scope("u1"))


async def edges(backend: Any, name: str, type: str) -> list[tuple[str, str | None]]:
    [entity] = [e for e in await backend.list_entities(type) if e.name == name]
    details = await backend.get_entity(entity.id)
    return sorted(
        (r.type, r.target_name) for r in details.relationships if r.direction != "incoming"
    )


async def test_store_memory_writes_entities_and_edges_on_the_local_engine(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    model = ScriptedChatModel(answers({ALEX_FACT: ALEX_OUTPUT}))
    tools = tools_with(engine, model, logger)

    answer = await tools["store_memory"].run({"content": ALEX_FACT, "type": "fact"})

    assert answer["stored"] is True
    [sent] = model.calls
    assert sent.messages == [
        {"role": "user", "content": memory_extraction_prompt("fact", ALEX_FACT)}
    ]
    assert sent.options == {"response_format": response_format()}
    stored = {(e.name, e.type): e.description for e in await engine.list_entities()}
    assert stored == {
        ("Alex", "person"): "A software engineer",
        ("TechCorp", "organization"): ALEX_FACT,
        ("Berlin", "place"): "Capital of Germany",
    }
    assert await edges(engine, "Alex", "person") == [("WORKS_AT", "TechCorp")]
    assert await edges(engine, "TechCorp", "organization") == [("LOCATED_IN", "Berlin")]
    assert logger.warnings == [
        'skipped self-referential entity "preferences" [preference]',
        'skipped self-referential entity "User Profiles" [user profile]',
    ]


async def test_extracted_entities_are_reused_only_on_an_exact_match(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    alex = await engine.add_entity("alex", "Person", description="already known")
    alexandra = await engine.add_entity("Alexandra", "person")
    other_alex = await engine.add_entity("Alex", "tool")
    output = {
        "entities": [{"name": "Alex", "type": "person", "description": "x"}],
        "relationships": [],
    }
    tools = tools_with(engine, ScriptedChatModel(answers({"Alex is here": output})), logger)
    await tools["store_memory"].run({"content": "Alex is here", "type": "fact"})

    people = await engine.list_entities()
    assert sorted(e.id for e in people) == sorted([alex.id, alexandra.id, other_alex.id])


async def test_skip_entity_replaces_the_default_guard(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    skipped: list[EntityCandidate] = []

    def skip(candidate: EntityCandidate) -> bool:
        skipped.append(candidate)
        return candidate.name == "Berlin"

    tools = tools_with(
        engine,
        ScriptedChatModel(answers({ALEX_FACT: ALEX_OUTPUT})),
        logger,
        extraction_options={"skip_entity": skip},
    )
    await tools["store_memory"].run({"content": ALEX_FACT, "type": "pattern"})

    names = sorted(e.name for e in await engine.list_entities())
    assert names == ["Alex", "TechCorp", "User Profiles", "preferences"]
    assert skipped[2] == EntityCandidate("Berlin", "place", "Capital of Germany")
    assert logger.warnings == ['skipped self-referential entity "Berlin" [place]']
    assert await edges(engine, "Alex", "person") == [
        ("HAS", "preferences"),
        ("WORKS_AT", "TechCorp"),
    ]


async def test_any_failure_falls_back_to_the_flat_entity(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    model = ScriptedChatModel(
        answers(
            {
                "Likes tea": RuntimeError("model down"),
                "Likes coffee": "this is not JSON",
                "Likes cocoa": {"entities": [{"name": "Cocoa"}], "relationships": []},
            }
        )
    )
    tools = tools_with(engine, model, logger)
    for content in ("Likes tea", "Likes coffee", "Likes cocoa"):
        answer = await tools["store_memory"].run({"content": content, "type": "user_preference"})
        assert answer["stored"] is True

    names = sorted(e.name for e in await engine.list_entities(type="user_preference"))
    assert names == ["Likes cocoa", "Likes coffee", "Likes tea"]
    assert [(level, m) for level, m, _ in logger.records] == [
        ("error", EXTRACTION_FAILED_FIRST),
        ("warn", EXTRACTION_FAILED),
        ("warn", EXTRACTION_FAILED),
    ]
    # a new tool set is a new client: its first failure is an error again
    again = tools_with(engine, ScriptedChatModel(answers({"x y": RuntimeError("down")})), logger)
    await again["store_memory"].run({"content": "x y", "type": "fact"})
    assert logger.records[-1][:2] == ("error", EXTRACTION_FAILED_FIRST)


async def test_entities_written_before_a_failure_remain(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    class FailsOnBerlin(Faulty):
        async def add_entity(self, name: str, type: str, **kwargs: Any) -> Any:
            if name == "Berlin":
                raise ConnectionError("write refused")
            return await self.inner.add_entity(name, type, **kwargs)

    backend = FailsOnBerlin(engine, {})
    tools = tools_with(backend, ScriptedChatModel(answers({ALEX_FACT: ALEX_OUTPUT})), logger)
    await tools["store_memory"].run({"content": ALEX_FACT, "type": "fact"})

    names = sorted(e.name for e in await engine.list_entities())
    assert names == ["Alex", ALEX_FACT, "TechCorp"]
    assert logger.records[-1][:2] == ("error", EXTRACTION_FAILED_FIRST)


async def test_an_extraction_that_stores_nothing_keeps_the_memory_flat(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    nothing = {"entities": [{"name": "dark mode", "type": "preference", "description": ""}]}
    model = ScriptedChatModel(answers({"Prefers dark mode": {**nothing, "relationships": []}}))
    tools = tools_with(engine, model, logger)
    await tools["store_memory"].run({"content": "Prefers dark mode", "type": "user_preference"})
    assert [e.name for e in await engine.list_entities()] == ["Prefers dark mode"]
    assert logger.warnings == ['skipped self-referential entity "dark mode" [preference]']


async def test_interactions_are_never_extracted(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    model = ScriptedChatModel([])
    tools = tools_with(engine, model, logger)
    await ensure_memory_stored(tools)({"text": "Alex works at TechCorp"})
    assert model.calls == []


@pytest.fixture
async def hosted() -> AsyncIterator[HostedBackend]:
    """The hosted REST client → the real server app (in-process), hosted capabilities."""
    async with SQLiteBackend(":memory:", embeddings=False) as root:
        app = create_app(root)
        async with hosted_in_process(
            app, "graph-extraction-test", capabilities=HOSTED_CAPABILITIES
        ) as client:
            yield client


async def test_on_hosted_nams_edges_are_skipped_with_one_warning(
    hosted: HostedBackend, caplog: pytest.LogCaptureFixture
) -> None:
    facts = {
        "Alex uses Neovim": {
            "entities": [
                {"name": "Alex", "type": "person", "description": "An engineer"},
                {"name": "Neovim", "type": "tool", "description": "An editor"},
            ],
            "relationships": [{"from": "Alex", "to": "Neovim", "type": "USES"}],
        },
        "Alex lives in Berlin": {
            "entities": [
                {"name": "Alex", "type": "person", "description": "An engineer"},
                {"name": "Berlin", "type": "place", "description": "A city"},
            ],
            "relationships": [{"from": "Alex", "to": "Berlin", "type": "LIVES_IN"}],
        },
        "Alex works at TechCorp": {
            "entities": [
                {"name": "Alex", "type": "person", "description": "An engineer"},
                {"name": "TechCorp", "type": "organization", "description": "A company"},
            ],
            "relationships": [{"from": "Alex", "to": "TechCorp", "type": "WORKS_AT"}],
        },
    }
    tools = tools_with(hosted, ScriptedChatModel(answers(facts)))
    caplog.set_level(logging.WARNING, logger="nams_local")

    for content in facts:
        answer = await tools["store_memory"].run({"content": content, "type": "fact"})
        assert answer["stored"] is True

    warnings = [r.getMessage() for r in caplog.records if r.name == "nams_local"]
    assert warnings == [f"[nams] {RELATIONSHIP_WRITES_UNSUPPORTED}"]
    stored = sorted((e.name, e.type) for e in await hosted.list_entities())
    assert stored == [
        ("Alex", "person"),
        ("Berlin", "place"),
        ("Neovim", "tool"),
        ("TechCorp", "organization"),
    ]
    assert await edges(hosted, "Alex", "person") == []
