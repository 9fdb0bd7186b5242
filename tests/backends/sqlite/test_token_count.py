"""The fast token count is the regex count, on every kind of text."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from backends.sqlite.token_count import token_count

#: The definition the stored counts have always followed.
REFERENCE = re.compile(r"\w+|[^\w\s]", re.UNICODE)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=80))
def test_ascii_text_counts_like_the_regex(text: str) -> None:
    assert token_count(text) == len(REFERENCE.findall(text))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_any_text_counts_like_the_regex(text: str) -> None:
    assert token_count(text) == len(REFERENCE.findall(text))


def test_edges() -> None:
    cases = ["", " ", "word", "\x1c\x1d", "a_b-c", "  lead and trail  ", "émigré café", "x\ty\nz!?"]
    for text in cases:
        assert token_count(text) == len(REFERENCE.findall(text)), text
