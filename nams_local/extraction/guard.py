"""The meta-entity guard (provider-behavior §6.4): the default ``skip_entity`` rule.

Models asked to extract from "what do you remember about me?" and from the assistant's own
memory summaries love to invent entities such as ``memory``, ``preferences`` or
``user profile``. The guard drops them by shape, not by word list, so it also covers
languages we never saw: a name that is all lower case is a common noun, not a named entity;
a name that is just its own type (``preferences`` of type ``preference``) says nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["EntityCandidate", "SkipEntity", "is_meta_entity", "normalise_name", "singular"]

_SPACES = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class EntityCandidate:
    """What a ``skip_entity`` callback sees: the extracted name, type and description."""

    name: str
    type: str
    description: str = ""


#: A replacement rule: return True to skip the candidate.
SkipEntity = Callable[[EntityCandidate], bool]


def normalise_name(name: str) -> str:
    """Trim, lower-case, and collapse whitespace runs to one space."""
    return _SPACES.sub(" ", name.strip().lower())


def singular(word: str) -> str:
    """``ies`` → ``y``, else drop one trailing ``s``, else unchanged (§6.4's rule)."""
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith("s"):
        return word[:-1]
    return word


def is_meta_entity(candidate: EntityCandidate) -> bool:
    """True when the default guard skips the candidate (§6.4)."""
    normalised = normalise_name(candidate.name)
    if not normalised:
        return True
    trimmed = candidate.name.strip()
    if trimmed == trimmed.lower() and trimmed != trimmed.upper():
        return True
    return singular(normalised) == singular(normalise_name(candidate.type))
