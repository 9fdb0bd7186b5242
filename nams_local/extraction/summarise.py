"""Summarisers turn messages into observations and observations into reflections.

The engine calls a summariser every N messages of a conversation (an observation) and
every M observations (a reflection that supersedes the previous one). The default,
:class:`ExtractiveSummariser`, is offline and deterministic: it keeps the most informative
sentences verbatim and, when it has an extractor, appends the facts it extracts — so an
observation never says anything the conversation did not. A model-backed summariser
(``nams_local.integrations.LLMSummariser``) writes prose instead.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from .types import SELF, ExtractionInput, Extractor

__all__ = ["ExtractiveSummariser", "Summariser"]

#: (role, text) of one message.
Turn = tuple[str, str]

_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
_WORD = re.compile(r"\w+", re.UNICODE)
_CAPITALISED = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][\w'-]*")
_FIRST_PERSON = re.compile(
    r"\b(i|i'm|i am|my|we|our|i've|i'd|i'll)\b(?!\s+(think|guess|mean|see|wonder))", re.I
)
_FILLER = re.compile(
    r"^\s*(hi|hey|hello|thanks|thank you|ok|okay|sure|great|cool|got it|bye|yes|no|lol)\b",
    re.I,
)


#: Only the start of a (huge) message is read, and a kept sentence is clipped, so one
#: pasted document cannot turn into a document-sized observation.
MAX_READ_CHARS = 20_000
MAX_SENTENCE_CHARS = 300
#: Up to this many characters of messages are scored where ``observe`` is awaited; more
#: (a hostile bulk's long messages) are scored on a thread, so a server's event loop never
#: stalls on one tenant's summary while the other tenants' requests wait (issue 12).
INLINE_CHARS = 2_000


def _clip(sentence: str) -> str:
    if len(sentence) <= MAX_SENTENCE_CHARS:
        return sentence
    return sentence[: MAX_SENTENCE_CHARS - 1].rstrip() + "…"


@runtime_checkable
class Summariser(Protocol):
    """Writes observation and reflection text."""

    async def observe(self, messages: Sequence[Turn]) -> str:
        """One observation summarising ``messages`` ((role, text) pairs, oldest first)."""
        ...

    async def reflect(self, observations: Sequence[str], previous: str | None) -> str:
        """A reflection over ``observations`` (oldest first) that replaces ``previous``."""
        ...


def _best_sentences(messages: Sequence[Turn], count: int) -> list[str]:
    """The ``count`` most salient sentences of ``messages``, in conversation order."""
    scored: list[tuple[float, int, str]] = []
    for role, text in messages:
        for match in _SENTENCE.finditer(text[:MAX_READ_CHARS]):
            sentence = _clip(" ".join(match.group().split()))
            score = _salience(sentence)
            if score > 0:
                scored.append((score, len(scored), f"{role.capitalize()}: {sentence}"))
    best = sorted(scored, key=lambda x: (-x[0], x[1]))[:count]
    return [text for _, _, text in sorted(best, key=lambda x: x[1])]


def _salience(sentence: str) -> float:
    """How much a sentence is worth keeping: names, first-person statements, substance."""
    words = _WORD.findall(sentence)
    if len(words) < 3 or _FILLER.match(sentence):
        return 0.0
    score = min(len(words), 25) / 25
    score += 0.8 * len(_CAPITALISED.findall(sentence))
    if _FIRST_PERSON.search(sentence):
        score += 1.0
    if sentence.rstrip().endswith("?"):
        score -= 0.7
    return score


class ExtractiveSummariser:
    """Salient sentences verbatim (with who said them), plus extracted facts.

    Args:
        sentences: how many sentences an observation keeps.
        extractor: when given, facts it extracts from the messages are appended as
            ``Facts: user WORKS_AT TechCorp; ...``.
        reflection_chars: a reflection is cut to about this many characters.
    """

    def __init__(
        self,
        *,
        sentences: int = 4,
        extractor: Extractor | None = None,
        reflection_chars: int = 1200,
    ) -> None:
        self.sentences = sentences
        self.extractor = extractor
        self.reflection_chars = reflection_chars

    async def observe(self, messages: Sequence[Turn]) -> str:
        if sum(min(len(text), MAX_READ_CHARS) for _, text in messages) > INLINE_CHARS:
            parts = await asyncio.to_thread(_best_sentences, messages, self.sentences)
        else:
            parts = _best_sentences(messages, self.sentences)
        facts = await self._facts(messages)
        if facts:
            parts.append("Facts: " + "; ".join(facts) + ".")
        return " ".join(parts) if parts else "Small talk; no facts stated."

    async def _facts(self, messages: Sequence[Turn]) -> list[str]:
        if self.extractor is None:
            return []
        facts: list[str] = []
        user_name: str | None = None
        for role, text in messages:
            found = await self.extractor.extract(
                ExtractionInput(text=text, role=role, user_name=user_name)
            )
            user_name = found.user_name or user_name
            for rel in found.relationships:
                source = (user_name or "user") if rel.source == SELF else rel.source
                target = (user_name or "user") if rel.target == SELF else rel.target
                fact = f"{source} {rel.type} {target}"
                if fact not in facts:
                    facts.append(fact)
        return facts

    async def reflect(self, observations: Sequence[str], previous: str | None) -> str:
        """The newest observations first, then older material while it fits."""
        kept: list[str] = []
        size = 0
        for text in [*reversed(observations), *([previous] if previous else [])]:
            for sentence in (" ".join(s.split()) for s in _SENTENCE.findall(text)):
                if not sentence or sentence in kept:
                    continue
                if size + len(sentence) > self.reflection_chars and kept:
                    return " ".join(kept)
                kept.append(sentence)
                size += len(sentence) + 1
        return " ".join(kept) if kept else "Nothing of note yet."
