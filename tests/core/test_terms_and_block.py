"""Provider-behavior §3.2 (fallback terms, overlap) and §3.7–3.8 (block, injection)."""

from __future__ import annotations

import copy

from nams_local.memory_block import (
    GRAPH_NOTE,
    HEADER,
    format_memory_block,
    inject_memory_block,
    query_text,
)
from nams_local.retrieval import MemoryHit
from nams_local.retrieval_terms import fallback_terms, overlap, title_case


def test_terms_strip_punctuation_and_possessives() -> None:
    assert fallback_terms("Alex's?") == ["Alex"]
    assert fallback_terms("(Priya’s) «garden»!") == ["garden", "Garden", "Priya"]
    assert fallback_terms("ALEX'S") == ["ALEX", "Alex"]


def test_terms_keep_words_with_three_letters_or_numbers() -> None:
    assert fallback_terms("is it ok? e-mail a1 abc") == ["e-mail", "E-mail", "abc", "Abc"]
    assert fallback_terms("?? -- !!") == []


def test_terms_are_the_four_longest_stable_on_ties() -> None:
    terms = fallback_terms("one three seven eleven twelve forty")
    assert terms == [
        "eleven", "Eleven", "twelve", "Twelve", "three", "Three", "seven", "Seven",
    ]  # fmt: skip


def test_terms_title_case_and_dedupe() -> None:
    assert title_case("NEOVIM") == "Neovim"
    assert fallback_terms("NEOVIM neovim Neovim") == ["NEOVIM", "Neovim", "neovim"]
    assert fallback_terms("Alex alex") == ["Alex", "alex"]


def test_overlap_counts_distinct_shared_words() -> None:
    assert overlap("Alex works at TechCorp, Alex!", "where does alex work at?") == 2
    assert overlap("nothing here", "where does alex work") == 0


def _hits(*sources: str) -> list[MemoryHit]:
    return [MemoryHit(content=f"fact {i}", source=s, type="x") for i, s in enumerate(sources)]  # type: ignore[arg-type]


def test_block_text_without_graph() -> None:
    block = format_memory_block(_hits("long-term", "conversation"))
    assert block == f"{HEADER}\n1. [long-term] fact 0\n2. [conversation] fact 1"
    assert format_memory_block([]) == ""


def test_block_text_with_graph_note() -> None:
    block = format_memory_block(_hits("graph", "cross-session"))
    assert block == f"{HEADER}\n1. [graph] fact 0\n2. [cross-session] fact 1\n{GRAPH_NOTE}"
    assert not block.endswith("\n")


def test_string_injection_is_copy_on_write() -> None:
    messages = [
        {"role": "system", "content": "be nice"},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "where do I live?"},
    ]
    before = copy.deepcopy(messages)
    out = inject_memory_block(messages, "BLOCK")
    assert out is not None
    assert out[3]["content"] == "BLOCK\n\nwhere do I live?"
    assert out[1]["content"] == "first"
    assert messages == before
    assert out[3] is not messages[3]


def test_parts_injection_puts_a_text_part_first() -> None:
    parts = [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "x"}}]
    messages = [{"role": "user", "content": parts}]
    before = copy.deepcopy(messages)
    out = inject_memory_block(messages, "BLOCK")
    assert out is not None
    assert out[0]["content"] == [{"type": "text", "text": "BLOCK\n\n"}, *parts]
    assert messages == before


def test_injection_leaves_other_shapes_alone() -> None:
    assert inject_memory_block([{"role": "user", "content": None}], "BLOCK") is None
    assert inject_memory_block([{"role": "assistant", "content": "hi"}], "BLOCK") is None
    assert inject_memory_block([{"role": "user", "content": "hi"}], "") is None


def test_query_text_rules() -> None:
    assert query_text([{"role": "user", "content": "  as is  "}]) == "  as is  "
    parts = [
        {"type": "text", "text": " a"},
        {"type": "image_url", "image_url": {}},
        {"type": "text", "text": "b "},
    ]
    assert query_text([{"role": "user", "content": parts}]) == "ab"
    assert query_text([{"role": "assistant", "content": "x"}]) == ""
