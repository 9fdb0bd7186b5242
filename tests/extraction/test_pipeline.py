"""Every persisted user/assistant message is extracted into entities, relationships and
mentions; its unit's status says how it went; modes sync, background and off."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from backends.sqlite import SQLiteBackend
from nams_local.backend import MemoryBackend
from nams_local.extraction import (
    SELF,
    EntityCandidate,
    ExtractedEntity,
    ExtractedRelationship,
    Extraction,
    ExtractionInput,
)
from nams_local.models import EntityGraph, NewMessage


def _triples(graph: EntityGraph) -> set[tuple[str, str, str]]:
    nodes = {n.id: n.name for n in graph.nodes}
    return {(nodes[e.source], e.type, nodes[e.target]) for e in graph.edges}


async def test_seed_story_becomes_a_graph_before_add_message_returns(
    backend: MemoryBackend,
) -> None:
    conv = await backend.create_conversation(user_id="u-alex")
    first = await backend.add_message(conv.id, "user", "User is named Alex, works at TechCorp")
    await backend.add_message(conv.id, "user", "I live in Bangalore and I use Neovim daily.")
    await backend.add_message(conv.id, "assistant", "Got it, you prefer dark mode in Neovim.")

    entities = {(e.name, e.type) for e in await backend.list_entities()}
    assert {("Alex", "person"), ("TechCorp", "organization"), ("Bangalore", "location")} <= (
        entities
    )
    assert ("Neovim", "tool") in entities
    triples = _triples(await backend.get_graph())
    assert ("Alex", "WORKS_AT", "TechCorp") in triples
    assert ("Alex", "LIVES_IN", "Bangalore") in triples
    assert ("Alex", "USES", "Neovim") in triples

    status = await backend.get_extraction_status(conv.id)
    assert [u.status for u in status.units] == ["done", "done", "done"]
    assert all(u.attempts == 1 and u.last_run is not None for u in status.units)
    alex = next(e for e in await backend.list_entities("person") if e.name == "Alex")
    history = await backend.get_entity_history(alex.id)
    assert first.id in {m.message_id for m in history.mentions}
    assert alex.source_stage == "extraction"


async def test_bulk_messages_are_extracted_in_order(backend: MemoryBackend) -> None:
    conv = await backend.create_conversation(user_id="u-bulk")
    await backend.add_messages(
        conv.id,
        [
            NewMessage(role="user", content="Hi! My name is Maya."),
            NewMessage(role="system", content="You are a helpful assistant at Contoso."),
            NewMessage(role="user", content="I work at Globex in Berlin."),
        ],
    )
    status = await backend.get_extraction_status(conv.id)
    assert [u.status for u in status.units] == ["done", "skipped", "done"]
    triples = _triples(await backend.get_graph())
    assert ("Maya", "WORKS_AT", "Globex") in triples  # "I" became Maya, named a turn earlier
    assert "Contoso" not in {e.name for e in await backend.list_entities()}  # system: skipped


async def test_the_user_is_a_placeholder_until_named_then_renamed(engine: SQLiteBackend) -> None:
    conv = await engine.create_conversation(user_id="u-42")
    await engine.add_message(conv.id, "user", "I work at Initech.")
    placeholder = await engine.get_entity_by_name("u-42", "person")
    assert placeholder is not None
    await engine.add_message(conv.id, "user", "By the way, my name is Sam.")
    renamed = await engine.get_entity(placeholder.id)
    assert renamed.name == "Sam"
    assert [(r.type, r.target_name) for r in renamed.relationships] == [("WORKS_AT", "Initech")]
    assert await engine.get_entity_by_name("u-42") is None


async def test_naming_the_user_merges_into_an_existing_person(engine: SQLiteBackend) -> None:
    sam = await engine.add_entity("Sam", "person", "known from the CRM")
    conv = await engine.create_conversation(user_id="u-43")
    await engine.add_message(conv.id, "user", "I live in Lisbon.")
    await engine.add_message(conv.id, "user", "My name is Sam.")
    details = await engine.get_entity(sam.id)
    assert ("LIVES_IN", "Lisbon") in {(r.type, r.target_name) for r in details.relationships}
    assert "u-43" not in {e.name for e in await engine.list_entities()}


async def test_repeated_facts_make_one_entity_and_one_edge(engine: SQLiteBackend) -> None:
    conv = await engine.create_conversation(user_id="u-rep")
    for text in ("I work at TechCorp.", "i work at techcorp", "I work at TechCorp!"):
        await engine.add_message(conv.id, "user", text)
    orgs = await engine.list_entities("organization")
    assert [e.name for e in orgs] == ["TechCorp"]
    graph = await engine.get_graph()
    assert [e.type for e in graph.edges] == ["WORKS_AT"]
    history = await engine.get_entity_history(orgs[0].id)
    assert len(history.mentions) == 3


class Exploding:
    async def extract(self, message: ExtractionInput) -> Extraction:
        if "boom" in message.text:
            raise RuntimeError("model unavailable")
        return Extraction(entities=(ExtractedEntity("Kyoto", "location"),))


async def test_a_failing_extractor_marks_the_unit_and_never_fails_the_write(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with SQLiteBackend(":memory:", embeddings=False, extractor=Exploding()) as engine:
        conv = await engine.create_conversation()
        with caplog.at_level(logging.WARNING, logger="nams_local.extraction"):
            stored = await engine.add_message(conv.id, "user", "boom goes the model")
            await engine.add_message(conv.id, "user", "Kyoto in spring")
        assert (await engine.list_messages(conv.id))[-1].id == stored.id
        units = (await engine.get_extraction_status(conv.id)).units
        assert [u.status for u in units] == ["failed", "done"]
        assert units[0].error == "RuntimeError: model unavailable"
        assert [e.name for e in await engine.list_entities()] == ["Kyoto"]
        assert any("model unavailable" in r.getMessage() for r in caplog.records)


class Meta:
    """An extractor that falls for the self-reference trap, as models do."""

    async def extract(self, message: ExtractionInput) -> Extraction:
        return Extraction(
            entities=(
                ExtractedEntity("memory", "concept"),
                ExtractedEntity("Preferences", "preference"),
                ExtractedEntity("Oslo", "location"),
            ),
            relationships=(
                ExtractedRelationship(SELF, "memory", "HAS"),
                ExtractedRelationship(SELF, "Oslo", "LIVES_IN"),
            ),
        )


async def test_the_meta_entity_guard_and_its_override() -> None:
    async with SQLiteBackend(":memory:", embeddings=False, extractor=Meta()) as engine:
        conv = await engine.create_conversation(user_id="kim")
        await engine.add_message(conv.id, "user", "anything")
        assert sorted(e.name for e in await engine.list_entities()) == ["Oslo", "kim"]
        assert _triples(await engine.get_graph()) == {("kim", "LIVES_IN", "Oslo")}

    def only_places(candidate: EntityCandidate) -> bool:
        return candidate.type != "location"

    async with SQLiteBackend(
        ":memory:", embeddings=False, extractor=Meta(), skip_entity=only_places
    ) as engine:
        conv = await engine.create_conversation(user_id="kim")
        await engine.add_message(conv.id, "user", "anything")
        assert sorted(e.name for e in await engine.list_entities()) == ["Oslo", "kim"]


class Gated:
    """Holds every extraction until released, to prove background mode does not wait."""

    def __init__(self) -> None:
        self.release = asyncio.Event()

    async def extract(self, message: ExtractionInput) -> Extraction:
        await self.release.wait()
        return Extraction(entities=(ExtractedEntity(message.text.split()[-1], "location"),))


async def test_background_mode_returns_at_once_and_wait_for_extraction_waits() -> None:
    gated = Gated()
    async with SQLiteBackend(
        ":memory:", embeddings=False, extraction="background", extractor=gated, summariser=None
    ) as engine:
        conv = await engine.create_conversation()
        for city in ("Oslo", "Lima", "Pune"):
            await engine.add_message(conv.id, "user", f"Flying to {city}")
        units = (await engine.get_extraction_status(conv.id)).units
        assert [u.status for u in units] == ["pending"] * 3
        assert await engine.list_entities() == []
        gated.release.set()
        await engine.wait_for_extraction(conv.id)
        assert [e.name for e in await engine.list_entities()] == ["Oslo", "Lima", "Pune"]
        units = (await engine.get_extraction_status(conv.id)).units
        assert [u.status for u in units] == ["done"] * 3


async def test_extraction_off_extracts_and_summarises_nothing() -> None:
    async with SQLiteBackend(":memory:", embeddings=False, extraction="off") as engine:
        conv = await engine.create_conversation()
        for i in range(12):
            await engine.add_message(conv.id, "user", f"I work at TechCorp, note {i}.")
        assert await engine.list_entities() == []
        assert {u.status for u in (await engine.get_extraction_status(conv.id)).units} == {
            "skipped"
        }
        assert await engine.list_observations(conv.id) == []


async def test_extraction_status_route_counts_by_status(backend: MemoryBackend) -> None:
    conv = await backend.create_conversation()
    await backend.add_message(conv.id, "user", "I use Python.")
    await backend.add_message(conv.id, "system", "Be brief.")
    units = (await backend.get_extraction_status(conv.id)).units
    assert sorted(u.status for u in units) == ["done", "skipped"]


async def test_the_mode_is_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    from nams_local.config import open_local_backend
    from nams_local.errors import InvalidInputError

    monkeypatch.setenv("NAMS_EXTRACTION", "off")
    engine = open_local_backend(":memory:", embeddings=False)
    try:
        conv = await engine.create_conversation()
        await engine.add_message(conv.id, "user", "I work at TechCorp.")
        assert await engine.list_entities() == []
    finally:
        await engine.aclose()
    monkeypatch.setenv("NAMS_EXTRACTION", "eventually")
    with pytest.raises(InvalidInputError, match="NAMS_EXTRACTION must be"):
        open_local_backend(":memory:", embeddings=False)


async def test_a_model_extractor_feeds_the_engine() -> None:
    from nams_local.integrations import LLMExtractor, ScriptedChatModel

    answer = (
        '{"entities": [{"name": "Alex", "type": "person", "description": "the user"},'
        ' {"name": "Nimbus", "type": "organization", "description": "a cloud startup"},'
        ' {"name": "memories", "type": "concept", "description": ""}],'
        ' "relationships": [{"from": "Alex", "to": "Nimbus", "type": "WORKS_AT"},'
        ' {"from": "Alex", "to": "memories", "type": "HAS"}]}'
    )
    model = ScriptedChatModel([answer])
    async with SQLiteBackend(":memory:", embeddings=False, extractor=LLMExtractor(model)) as engine:
        conv = await engine.create_conversation(user_id="alex")
        await engine.add_message(conv.id, "user", "I'm Alex and I joined Nimbus.")
        assert sorted(e.name for e in await engine.list_entities()) == ["Alex", "Nimbus"]
        assert ("Alex", "WORKS_AT", "Nimbus") in _triples(await engine.get_graph())
        nimbus = await engine.get_entity_by_name("Nimbus")
        assert nimbus is not None and nimbus.description == "a cloud startup"
    assert "I'm Alex and I joined Nimbus." in str(model.calls[0].messages)
    assert model.calls[0].options["response_format"]["type"] == "json_schema"


async def test_work_left_pending_by_a_stopped_process_is_resumed(tmp_path: Path) -> None:
    db = tmp_path / "resume.db"
    gated = Gated()  # never released: the "process" stops with its queue unfinished
    engine = SQLiteBackend(db, embeddings=False, extraction="background", extractor=gated)
    conv = await engine.create_conversation()
    await engine.add_message(conv.id, "user", "Flying to Quito")
    # What a killed process leaves: no worker, a pending unit on disk.
    jobs = list(engine._pipeline._jobs.values())
    for job in jobs:
        job.cancel()
    await asyncio.gather(*jobs, return_exceptions=True)
    engine.store.close()
    # Opening the store is enough: its first call resumes the queue, no call needed.
    async with SQLiteBackend(db, embeddings=False) as reopened:
        await reopened.wait_for_extraction(conv.id)
        assert [u.status for u in (await reopened.get_extraction_status(conv.id)).units] == ["done"]
        # "Flying to Quito": the (anonymous) user VISITS Quito.
        assert sorted(e.name for e in await reopened.list_entities()) == ["Quito", "User"]
        assert await reopened.resume_extraction() == 0
