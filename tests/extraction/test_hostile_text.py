"""Hostile text cannot make extraction expensive: sentences and messages are bounded.

(Before the bounds, one 30,000-character message of "I work at I work at ..." took 15 s
of CPU on the event loop. What the bounds buy is measured by hand, not asserted here;
these tests pin the bounds themselves.)
"""

from __future__ import annotations

from backends.sqlite import SQLiteBackend
from nams_local.extraction import ExtractionInput
from nams_local.extraction.candidates import MAX_SENTENCE_CHARS, split_sentences
from nams_local.extraction.rules import MAX_TEXT_CHARS, extract_sync


def test_no_sentence_is_longer_than_the_bound() -> None:
    for text in ("I work at " * 3000, "x" * 10_000, "Mr. " * 5000 + "Smith", "a b. " * 4000):
        sentences = split_sentences(text)
        assert sentences and all(len(s.text) <= MAX_SENTENCE_CHARS for s in sentences)
        assert "".join(s.text for s in sentences).replace(" ", "") in text.replace(" ", "")


def test_abbreviations_still_do_not_end_sentences() -> None:
    assert [s.text for s in split_sentences("I met Dr. Smith. He works at Acme.")] == [
        "I met Dr. Smith.",
        "He works at Acme.",
    ]


def test_only_the_start_of_a_huge_message_is_read() -> None:
    padding = "lorem ipsum " * (MAX_TEXT_CHARS // 12 + 10)
    early = extract_sync(ExtractionInput(text="I work at Initech. " + padding))
    late = extract_sync(ExtractionInput(text=padding + " I work at Initech."))
    assert [e.name for e in early.entities] == ["Initech"]
    assert late.entities == ()


async def test_a_huge_hostile_message_is_stored_and_extracted() -> None:
    async with SQLiteBackend(":memory:", embeddings=False) as engine:
        conv = await engine.create_conversation()
        await engine.add_message(conv.id, "user", "I work at " * 30_000 + "Initech")
        [unit] = (await engine.get_extraction_status(conv.id)).units
        assert unit.status == "done"


async def test_an_observation_never_grows_with_a_pasted_document() -> None:
    from nams_local.extraction import ExtractiveSummariser

    turns = [("user", "I work at Initech and " + "really " * 50_000 + "like it.")] * 10
    summary = await ExtractiveSummariser().observe(turns)
    assert len(summary) < 2_000
