"""A question about the user ranks the user's own words above the assistant's.

"Which company do I work for now?" is answered by what the user said ("my badge for the
Blue Harbor office finally arrived"), not by the assistant's replies, which echo the
conversation's topics in the same words ("start by listing what the billing migration
still needs") and so sit among the nearest vectors of any question about it. So when a
conversation search's query is a question in the first person that does not address
the assistant ("I", "my", "me", no "you"), an assistant message's score is multiplied by
``ASSISTANT_PRIOR`` before the best ``limit`` are taken. A question that says "you"
("what did you suggest for dinner?") is ranked as before, and so is every other search.

Chosen on the two generated ``quality`` sets (docs/retrieval.md, session 10): messages
recall@10 rose on both as the factor went from 1.0 to 0.7 (synthetic 0.919 -> 0.948,
household 0.987 -> 0.993); below it the synthetic set was flat and the household set
gained 0.3 points more, so the milder factor is kept. Neither set was generated with this
rule in mind (their assistant turns are chatter on the user's topics, as in a real
chat). Scores stay in [0, 1] and only fall, so the relevance floor and gates can only
drop an assistant hit, never admit a new one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sqlalchemy import Connection

from . import dbapi
from .search import Prior

__all__ = ["ASSISTANT_PRIOR", "about_the_user", "for_query"]

#: The factor on an assistant message's score for a question about the user.
ASSISTANT_PRIOR = 0.7

_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")
#: The core's ``retrieval_time.FIRST_PERSON`` says the same for the graph source; a backend
#: imports no core module (the layer contract), so the engine keeps its own words.
_FIRST_PERSON = frozenset(
    {"i", "me", "my", "mine", "myself", "i'm", "i've", "i'd", "i'll", "im", "ive"}
)
_SECOND_PERSON = frozenset(
    {"you", "your", "yours", "yourself", "you're", "you've", "you'd", "you'll", "u"}
)

#: A query that begins with one of these is a question even without its ``?``.
_QUESTION_TEXT = """
what which who whom whose where when why how do does did is are am was were have has had
can could should would will shall may might must
"""
_QUESTION_WORDS = frozenset(_QUESTION_TEXT.split())


def about_the_user(query: str) -> bool:
    """The query is a question (a ``?``, or a question word first) that speaks of the
    user in the first person and does not address the assistant (no second person).

    Only questions: a query that is a statement ("I work at Harbourco") is a lookup of
    those words, and its exact match should come first whoever said it."""
    found = [w.replace("’", "'") for w in _WORD.findall(query.casefold())]
    if not found or ("?" not in query and found[0] not in _QUESTION_WORDS):
        return False
    words = set(found)
    return not words.isdisjoint(_FIRST_PERSON) and words.isdisjoint(_SECOND_PERSON)


def for_query(conn: Connection, query: str) -> Prior | None:
    """The prior of a message search for ``query`` in ``conn``'s transaction, ``None``
    when the query is not about the user (nothing to read)."""
    if not about_the_user(query):
        return None

    def prior(pks: Sequence[int]) -> dict[int, float]:
        if not pks:
            return {}
        marks = ",".join("?" * len(pks))
        rows = dbapi.fetch_all(
            conn,
            f"SELECT pk FROM messages WHERE pk IN ({marks}) AND role = 'assistant'",
            tuple(pks),
        )
        return {int(row.pk): ASSISTANT_PRIOR for row in rows}

    return prior
