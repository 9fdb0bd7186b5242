"""Entity resolution on write: when a new name is an existing entity, and when it may be.

Two names of the same type are the *same* entity when their match keys are equal: case,
whitespace, punctuation and a simple plural do not count ("TechCorp", "techcorp",
"Tech-Corp.", "TechCorps"), and configured aliases map one key onto another ("JS" →
"JavaScript"). Reuse is exact by design: a near match ("TechCorpp", "Alexandra" for
"Alex") is never merged silently, only reported as a merge candidate with its similarity,
so an explicit merge — which keeps the ``SAME_AS`` trail — stays the user's decision.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from rapidfuzz.distance import Indel

__all__ = ["DEFAULT_CANDIDATE_THRESHOLD", "Resolution", "match_key"]

#: Similarity (normalised Indel similarity of match keys, 0..1: ``2 * LCS / total length``,
#: difflib's ratio with the longest common subsequence) from which a near name is a candidate.
DEFAULT_CANDIDATE_THRESHOLD = 0.85
#: At most this many merge candidates are reported.
MAX_CANDIDATES = 5

# Punctuation that never tells two names apart. "+" and "#" do ("C", "C++", "C#").
_NOISE = re.compile(r"[\s.,;:!?'\"`’‘“”()\[\]{}\-_/\\|*~^]+")
# A trailing "s" that is a plural: not after s/u/i ("Glass", "Campus", "Paris").
_PLURAL = re.compile(r"(?<=[^\Wsui])s$")


def match_key(name: str, *, plural: bool = True) -> str:
    """The identity of a name for resolution (see the module docstring).

    ``plural=False`` keeps a trailing "s": people's names are not plurals ("Lucas" is
    not two "Luca"s), so person entities are keyed without the plural rule.
    """
    words = [w for w in _NOISE.split(unicodedata.normalize("NFKC", name).casefold()) if w]
    if plural and words and len(words[-1]) > 3:
        if words[-1].endswith("ies"):
            words[-1] = words[-1][:-3] + "y"
        else:
            words[-1] = _PLURAL.sub("", words[-1])
    return "".join(words)


@dataclass(frozen=True)
class Resolution:
    """How a store resolves entity names: aliases and the candidate threshold.

    ``aliases`` maps an alias to its canonical name (``{"JS": "JavaScript"}``); both sides
    go through :func:`match_key`, so the mapping is as forgiving as the names.
    """

    aliases: Mapping[str, str] = field(default_factory=dict)
    candidate_threshold: float = DEFAULT_CANDIDATE_THRESHOLD
    #: The aliases by match key, with and without the plural rule (derived).
    _keyed: dict[bool, dict[str, str]] = field(
        init=False, repr=False, compare=False, default_factory=lambda: {True: {}, False: {}}
    )

    def __post_init__(self) -> None:
        if not 0.0 < self.candidate_threshold <= 1.0:
            raise ValueError("candidate_threshold must be in (0, 1]")
        for alias, canonical in self.aliases.items():
            for plural, table in self._keyed.items():
                table[match_key(alias, plural=plural)] = match_key(canonical, plural=plural)

    def key(self, name: str, type_: str) -> str:
        """The key ``name`` is stored and looked up under, for an entity of ``type_``."""
        plural = type_.strip().casefold() != "person"
        raw = match_key(name, plural=plural)
        return self._keyed[plural].get(raw, raw)

    def candidates(self, key: str, others: Iterable[tuple[str, str]]) -> list[tuple[str, float]]:
        """``(id, similarity)`` of the ``(id, key)`` pairs close to ``key``, best first."""
        # rapidfuzz's bit-parallel LCS is O(len * len / 64) with a cutoff that stops early,
        # where difflib's SequenceMatcher was quadratic in time on long near-equal names.
        limit = self.candidate_threshold
        found: list[tuple[str, float]] = []
        for id_, other in others:
            if other == key:
                continue
            ratio = Indel.normalized_similarity(key, other, score_cutoff=limit)
            if ratio >= limit:
                found.append((id_, round(ratio, 4)))
        found.sort(key=lambda x: -x[1])
        return found[:MAX_CANDIDATES]
