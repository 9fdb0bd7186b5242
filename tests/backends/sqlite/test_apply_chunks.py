"""Queued extraction is written in bounded units of work, never splitting a message."""

from __future__ import annotations

from backends.sqlite.graph_writes import MessageExtraction
from backends.sqlite.pipeline import APPLY_FACTS, apply_chunks
from backends.sqlite.summaries import PendingMessage
from nams_local.extraction import Extraction
from nams_local.extraction.types import ExtractedEntity, ExtractedRelationship


def result(pk: int, entities: int, relationships: int = 0) -> MessageExtraction:
    found = Extraction(
        entities=tuple(ExtractedEntity(f"E{pk}-{i}", "person") for i in range(entities)),
        relationships=tuple(
            ExtractedRelationship(f"E{pk}-0", f"E{pk}-1", "KNOWS") for _ in range(relationships)
        ),
    )
    return MessageExtraction(PendingMessage(pk, f"m{pk}", "user", "text"), found)


def cost(chunk: list[MessageExtraction]) -> int:
    return sum(
        1 + len(r.extraction.entities) + len(r.extraction.relationships)
        for r in chunk
        if r.extraction is not None
    )


def test_chunks_keep_order_and_stay_within_the_budget() -> None:
    results = [result(pk, entities=pk % 5, relationships=pk % 3) for pk in range(64)]
    chunks = apply_chunks(results)
    assert [r for chunk in chunks for r in chunk] == results
    assert len(chunks) > 1
    assert all(cost(chunk) <= APPLY_FACTS for chunk in chunks)


def test_a_message_over_the_budget_is_a_unit_of_its_own() -> None:
    results = [result(1, 1), result(2, APPLY_FACTS * 3, 4), result(3, 1)]
    chunks = apply_chunks(results)
    assert [[r.message.pk for r in chunk] for chunk in chunks] == [[1], [2], [3]]


def test_failed_extractions_cost_one_and_nothing_is_never_empty() -> None:
    failed = MessageExtraction(PendingMessage(9, "m9", "user", "x"), None, "boom")
    assert apply_chunks([failed] * 3) == [[failed] * 3]
    assert apply_chunks([]) == [[]]
