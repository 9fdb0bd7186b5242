"""Relationship labels that say a fact ended: ``FORMERLY_WORKED_AT``, ``EX_PARTNER_OF``.

A chat model asked for relationships writes the past into the label more often than into
a field; these are read as the base fact, ended (``WORKS_AT``, ended), so a model's output
closes edges by the same rules as the rule extractor's "I used to work at X".
"""

from __future__ import annotations

import re

__all__ = ["ended_label"]

_PAST_PREFIX = re.compile(r"^(?:FORMER(?:LY)?|PREVIOUS(?:LY)?|USED_TO|EX|PAST|NO_LONGER|ONCE)_+")
#: Past or bare forms of the usual labels → the present form the rules compare.
_PRESENT = {
    "WORKED_AT": "WORKS_AT",
    "WORK_AT": "WORKS_AT",
    "WORKED_FOR": "WORKS_AT",
    "LIVED_IN": "LIVES_IN",
    "LIVE_IN": "LIVES_IN",
    "STUDIED_AT": "STUDIES_AT",
    "STUDY_AT": "STUDIES_AT",
    "USED": "USES",
    "USE": "USES",
    "PREFERRED": "PREFERS",
    "PREFER": "PREFERS",
    "MARRIED": "MARRIED_TO",
    "EMPLOYEE_OF": "WORKS_AT",
}
#: Whole labels that are an ended fact by themselves.
_ENDED = {"WAS_MARRIED_TO": "MARRIED_TO", "DIVORCED_FROM": "MARRIED_TO"}


def ended_label(label: str) -> tuple[str, bool]:
    """``(present label, ended)`` for an upper-snake label: ``FORMERLY_WORKED_AT`` →
    ``("WORKS_AT", True)``; a label with no past marker comes back as is, not ended."""
    if label in _ENDED:
        return _ENDED[label], True
    match = _PAST_PREFIX.match(label)
    if match is None or match.end() == len(label):
        return label, False
    base = label[match.end() :]
    return _PRESENT.get(base, base), True
