"""Time in retrieval: does a question ask about the past, and how a closed fact reads.

The graph source shows what holds now; a relationship that no longer holds (closed by a
newer fact, or stated as ended) is shown only when the question asks about the past
("where did I live before?", "used to", "in 2024", "when did I move?"), and then with its
interval, so the model can never mistake it for the present:
``(Alex)-[LIVES_IN 2021-03..2026-10]->(Bangalore)``. English only, like the rule
extractor: a question in another language sees current facts, which is the safe side.
"""

from __future__ import annotations

import re

__all__ = [
    "FIRST_PERSON",
    "PAST_QUESTION",
    "about_user",
    "asks_about_past",
    "interval",
    "relation_words",
    "type_relevance",
    "when_words",
]

#: Words of a question about earlier times.
PAST_QUESTION = re.compile(
    r"\b(?:before|used?\s+to|previous(?:ly)?|formerly|former|in\s+the\s+past|earlier|prior|"
    r"originally|ago|back\s+then|back\s+in|at\s+the\s+time|any\s?more|no\s+longer|history|"
    r"change[sd]?|moved?|moving|relocated?|left|quit|switched|"
    r"did|(?:was|were|had)\s+(?:i|we|you|he|she|they|my|your)|"
    r"old|ex|until|since|when|how\s+long)\b"
    r"|\b(?:19|20)\d{2}\b",
    re.IGNORECASE,
)


def asks_about_past(query: str) -> bool:
    """Whether ``query`` asks about how things were (so closed facts are relevant)."""
    return PAST_QUESTION.search(query) is not None


def _month(value: str | None) -> str:
    return value[:7] if value else "?"


def interval(valid_from: str | None, valid_until: str | None) -> str:
    """``2021-03..2026-10`` (month precision; ``?`` for a start nobody stated)."""
    return f"{_month(valid_from)}..{_month(valid_until)}"


#: "I", "my", "me": a question about the user, whose own facts are the graph's first root.
FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|me|my|mine|myself)\b", re.IGNORECASE)

#: Query words (prefixes) that point at a relationship type, beyond the type's own words.
_TYPE_HINTS: dict[str, tuple[str, ...]] = {
    "LIVES_IN": ("live", "living", "home", "city", "move", "moving", "relocat", "resid", "based"),
    "WORKS_AT": ("work", "job", "company", "employ", "office", "join", "quit", "career"),
    "STUDIES_AT": ("stud", "school", "universit", "college"),
    "MARRIED_TO": ("married", "wife", "husband", "spouse"),
    "PARTNER_OF": ("partner", "girlfriend", "boyfriend"),
    "USES": ("use", "tool", "editor"),
}


def about_user(query: str) -> bool:
    """Whether ``query`` is in the first person (so the user's own facts matter)."""
    return FIRST_PERSON.search(query) is not None


#: Idioms whose words would point at a type they do not mean ("what does my aunt do for a
#: living?" asks for a job, not a home).
_IDIOMS = re.compile(r"\b(?:for|make|makes|making|made|earn|earns|earning) a living\b")


def _pointing(type_: str, query: str) -> list[str]:
    """The words of ``query`` (each time it occurs) that point at relationship ``type_``."""
    key = "_".join(type_.upper().replace("-", " ").split())
    hints = _TYPE_HINTS.get(key, ()) + tuple(
        word.lower() for word in key.split("_") if len(word) > 3
    )
    words = re.findall(r"[a-z]+", _IDIOMS.sub(" ", query.lower()))
    return [word for word in words if any(word.startswith(h) for h in hints)]


def type_relevance(type_: str, query: str) -> int:
    """How many words of ``query`` point at relationship type ``type_``."""
    return len(_pointing(type_, query))


def relation_words(type_: str, query: str) -> set[str]:
    """The distinct words of ``query`` (lower-cased) that point at relationship ``type_``:
    "work" and "company" in "Which company do I work for?" for ``WORKS_AT``, but not
    "title" in "What is my job title?" (which asks for something a workplace is not)."""
    return set(_pointing(type_, query))


#: Words that say *when* a question is about, not *what* it asks for.
_WHEN_TEXT = (
    "still lately recently nowadays these last next this year years month months week weeks "
    "ago anymore yet ever again"
)
_WHEN = frozenset(_WHEN_TEXT.split())


def when_words(words: set[str]) -> set[str]:
    """The words of ``words`` (lower-cased) that only place a question in time ("still",
    "last year", "before"): they name no relation and no thing, so a fact need not hold
    them to answer the question."""
    return {w for w in words if w in _WHEN or PAST_QUESTION.fullmatch(w) is not None}
