"""A server's background rule extraction runs in a child process
(``backends/sqlite/extraction_process.py``): same results as in process, off the GIL,
and a child that dies costs nothing but a restart."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from backends.sqlite import SQLiteBackend
from backends.sqlite import extraction_process as xp
from backends.sqlite.pipeline import ExtractionMode
from nams_local.extraction import ExtractionInput, RuleExtractor
from nams_local.extraction.offload import extract_run

MESSAGES = [
    ("user", "Hi, my name is Priya Raman and I live in Lisbon."),
    ("assistant", "Nice to meet you, Priya! How is Lisbon?"),
    ("user", "I work at Globex as a data engineer and I use Postgres every day."),
    ("user", "My sister Mara moved to Toronto last year."),
]


async def _graph(
    backend: SQLiteBackend,
) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
    entities = await backend.list_entities()
    names = {e.id: e.name for e in entities}
    edges = [
        (e.name, r.type, names[r.target_id])
        for e in entities
        for r in (await backend.get_entity(e.id)).relationships
        if r.direction == "outgoing"
    ]
    return sorted((e.name, e.type) for e in entities), sorted(edges)


async def _extracted(
    path: Path, mode: ExtractionMode
) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
    async with SQLiteBackend(path, embeddings=False, extraction=mode) as backend:
        conversation = await backend.create_conversation("priya")
        for role, text in MESSAGES:
            await backend.add_message(conversation.id, role, text)
        await backend.wait_for_extraction(conversation.id)
        return await _graph(backend)


async def test_background_extraction_runs_in_a_child_with_the_same_results(tmp_path: Path) -> None:
    child = xp.shared()
    runs = child.runs
    in_child = await _extracted(tmp_path / "background.db", "background")
    assert child.runs > runs, "the background drain did not use the extraction process"
    assert child.pid is not None and child.pid != os.getpid()
    in_process = await _extracted(tmp_path / "sync.db", "sync")
    assert in_child == in_process
    assert ("Priya Raman", "person") in in_child[0] and ("Lisbon", "location") in in_child[0]


async def test_a_killed_child_is_replaced_and_no_extraction_is_lost(tmp_path: Path) -> None:
    child = xp.shared()
    await _extracted(tmp_path / "first.db", "background")
    killed = child.pid
    assert killed is not None
    os.kill(killed, signal.SIGKILL)
    found = await _extracted(tmp_path / "second.db", "background")
    assert ("Priya Raman", "person") in found[0]
    # The run that met the dead child was extracted in process; the next one starts anew.
    await _extracted(tmp_path / "third.db", "background")
    assert child.pid is not None and child.pid != killed


async def test_a_run_from_the_child_answers_the_summariser_from_the_parents_cache() -> None:
    """What the child found is remembered by the engine's extractor (the summariser asks
    it again for the same messages): the very objects come back, nothing is re-extracted."""
    items = [(f"m{i}", text, role) for i, (role, text) in enumerate(MESSAGES)]
    outcomes = await xp.shared().run(items, None)
    parent = RuleExtractor()
    parent.remember(items, None, outcomes)
    known = None
    for (_, text, role), (found, _) in zip(items, outcomes, strict=True):
        assert found is not None
        again = await parent.extract(ExtractionInput(text=text, role=role, user_name=known))
        assert again is found
        known = known or found.user_name
    assert outcomes == await extract_run(RuleExtractor(), items, None)
