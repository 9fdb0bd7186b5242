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

__all__ = ["PAST_QUESTION", "asks_about_past", "interval"]

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
