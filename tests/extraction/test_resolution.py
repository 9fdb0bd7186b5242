"""Entity resolution on write: one entity per name however it is spelled; near names are
only reported; explicit merges keep the SAME_AS trail."""

from __future__ import annotations

import pytest

from backends.sqlite import SQLiteBackend
from backends.sqlite.resolution import match_key
from nams_local.backend import MemoryBackend
from nams_local.errors import InvalidInputError


async def test_duplicate_writes_give_one_entity(backend: MemoryBackend) -> None:
    first = await backend.add_entity("TechCorp", "organization", "an employer")
    again = [
        await backend.add_entity(name, kind)
        for name, kind in (("techcorp", "organization"), ("TechCorp ", "Organization"))
    ]
    assert first.reused is False
    assert [(e.id, e.reused) for e in again] == [(first.id, True), (first.id, True)]
    assert [e.name for e in await backend.list_entities()] == ["TechCorp"]
    assert again[0].description == "an employer"  # nothing it held is overwritten


async def test_punctuation_plural_and_type_decide_identity(engine: SQLiteBackend) -> None:
    base = await engine.add_entity("Kubernetes Cluster", "tool")
    assert (await engine.add_entity("kubernetes-clusters.", "tool")).id == base.id
    other_type = await engine.add_entity("Kubernetes Cluster", "concept")
    assert other_type.id != base.id and other_type.reused is False
    lucas = await engine.add_entity("Lucas", "person")
    luca = await engine.add_entity("Luca", "person")  # a person's name is not a plural
    assert luca.id != lucas.id
    assert match_key("C++") != match_key("C") != match_key("C#")


async def test_reuse_fills_a_missing_description_and_adds_new_properties(
    engine: SQLiteBackend,
) -> None:
    bare = await engine.add_entity("Neovim", "tool", properties={"since": "2019"})
    filled = await engine.add_entity(
        "neovim", "tool", "Text editor", properties={"since": "2024", "mode": "dark"}
    )
    assert filled.id == bare.id and filled.description == "Text editor"
    assert filled.properties == {"since": "2019", "mode": "dark"}
    found = await engine.search_entities("editor", mode="text")
    assert [e.id for e in found.items] == [bare.id]


async def test_near_names_are_merge_candidates_not_merges(backend: MemoryBackend) -> None:
    techcorp = await backend.add_entity("TechCorp", "organization")
    await backend.add_entity("Globex", "organization")
    typo = await backend.add_entity("TechCorpp", "organization")
    assert typo.id != techcorp.id and typo.reused is False
    assert typo.merge_candidates is not None
    assert [(c.id, c.name) for c in typo.merge_candidates] == [(techcorp.id, "TechCorp")]
    assert 0.85 <= typo.merge_candidates[0].similarity < 1.0
    alex = await backend.add_entity("Alex", "person")
    alexandra = await backend.add_entity("Alexandra", "person")
    assert alexandra.id != alex.id and not alexandra.merge_candidates  # 0.62: not close


async def test_aliases_and_threshold_are_configurable() -> None:
    async with SQLiteBackend(
        ":memory:",
        embeddings=False,
        entity_aliases={"JS": "JavaScript", "K8s": "Kubernetes"},
        merge_candidate_threshold=0.6,
    ) as engine:
        js = await engine.add_entity("JavaScript", "tool")
        assert (await engine.add_entity("js", "tool")).id == js.id
        k8s = await engine.add_entity("K8s", "tool")
        assert (await engine.add_entity("kubernetes", "tool")).id == k8s.id
        alex = await engine.add_entity("Alex", "person")
        alexandra = await engine.add_entity("Alexandra", "person")
        assert [c.id for c in alexandra.merge_candidates or []] == [alex.id]
    with pytest.raises(InvalidInputError):
        SQLiteBackend(":memory:", embeddings=False, merge_candidate_threshold=0)


async def test_explicit_merge_moves_edges_and_keeps_same_as(engine: SQLiteBackend) -> None:
    alex = await engine.add_entity("Alex", "person")
    alexander = await engine.add_entity("Alexander", "person")
    acme = await engine.add_entity("Acme", "organization")
    await engine.add_relationship(alexander.id, acme.id, "WORKS_AT")
    await engine.merge_entities(alexander.id, alex.id)
    details = await engine.get_entity(alex.id)
    assert {(r.type, r.target_name, r.direction) for r in details.relationships} == {
        ("WORKS_AT", "Acme", "outgoing"),
        ("SAME_AS", "Alexander", "incoming"),
    }
    # The merged name now resolves to nothing new: the inert source is not reused.
    again = await engine.add_entity("Alexander", "person")
    assert again.id not in (alex.id, alexander.id)


async def test_the_server_says_reused_and_lists_candidates(backend: MemoryBackend) -> None:
    """Through the hosted client too: the extension fields survive the wire."""
    created = await backend.add_entity("Initech", "organization")
    reused = await backend.add_entity("INITECH", "organization")
    near = await backend.add_entity("Initec", "organization")
    assert (created.reused, reused.reused, near.reused) == (False, True, False)
    assert reused.id == created.id
    assert [c.name for c in near.merge_candidates or []] == ["Initech"]
