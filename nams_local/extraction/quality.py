"""Scoring an extractor against a hand-annotated chat corpus: precision, recall, F1.

The corpus (``tests/data/extraction_corpus.json``) lists, per message, the entities
(name, type) and relationships (source, TYPE, target) a human expects. Both the unit test
that guards the default extractor's quality and ``python -m benchmarks
extraction_quality`` use this module, so the figure asserted and the figure printed are
computed the same way.

Matching rules:

* entities match on (name key, type); the name key ignores case, spaces and punctuation
  ("VS Code" = "vscode"), so spelling variants of one name are one entity;
* a relationship endpoint naming the user (the known ``user_name``, the name the message
  states, or :data:`~nams_local.extraction.SELF`) is the user;
* symmetric relationship types (``SIBLING_OF``, ``FRIEND_OF``, ...) ignore direction.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .patterns import SYMMETRIC
from .types import SELF, Extraction, ExtractionInput, Extractor

__all__ = [
    "DEFAULT_CORPUS",
    "CorpusMessage",
    "QualityReport",
    "Score",
    "entity_key",
    "evaluate",
    "load_corpus",
]

#: The corpus in a source checkout (it is test data, not shipped in the wheel).
DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "tests" / "data" / "extraction_corpus.json"

_NOT_KEY = re.compile(r"[^\w#+]")

EntityKey = tuple[str, str]
RelKey = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class CorpusMessage:
    """One annotated message."""

    id: str
    role: str
    text: str
    user_name: str | None
    expected_user_name: str | None
    entities: tuple[tuple[str, str], ...]
    relationships: tuple[tuple[str, str, str], ...]
    #: ``dev`` (used while building the rule extractor) or ``heldout`` (never tuned on).
    split: str = "dev"

    def as_input(self) -> ExtractionInput:
        return ExtractionInput(text=self.text, role=self.role, user_name=self.user_name)


def load_corpus(path: Path | None = None) -> list[CorpusMessage]:
    """Read the corpus JSON (``DEFAULT_CORPUS`` when no path is given)."""
    data: dict[str, Any] = json.loads((path or DEFAULT_CORPUS).read_text(encoding="utf-8"))
    return [
        CorpusMessage(
            id=m["id"],
            role=m["role"],
            text=m["text"],
            user_name=m.get("user_name"),
            expected_user_name=m.get("expected_user_name"),
            entities=tuple((e[0], e[1]) for e in m["entities"]),
            relationships=tuple((r[0], r[1], r[2]) for r in m["relationships"]),
            split=m.get("split", "dev"),
        )
        for m in data["messages"]
    ]


def entity_key(name: str) -> str:
    """Case-, space- and punctuation-blind form of a name ("VS Code" → "vscode")."""
    return _NOT_KEY.sub("", name.casefold())


@dataclass(slots=True)
class Score:
    """True positives, false positives and false negatives of one kind of item."""

    tp: int = 0
    fp: int = 0
    fn: int = 0

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def add(self, expected: set[Any], found: set[Any]) -> None:
        self.tp += len(expected & found)
        self.fp += len(found - expected)
        self.fn += len(expected - found)

    def to_json(self) -> dict[str, float]:
        return {
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
        }


@dataclass(slots=True)
class QualityReport:
    """Micro-averaged scores over the corpus, overall and per type, plus every miss."""

    messages: int = 0
    entities: Score = field(default_factory=Score)
    relationships: Score = field(default_factory=Score)
    user_names: Score = field(default_factory=Score)
    entity_types: dict[str, Score] = field(default_factory=dict)
    relationship_types: dict[str, Score] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "messages": self.messages,
            "entities": self.entities.to_json(),
            "relationships": self.relationships.to_json(),
            "user_names": self.user_names.to_json(),
            "entity_types": {k: v.to_json() for k, v in sorted(self.entity_types.items())},
            "relationship_types": {
                k: v.to_json() for k, v in sorted(self.relationship_types.items())
            },
        }


def _by_type(scores: dict[str, Score], expected: set[Any], found: set[Any], at: int) -> None:
    for kind in {key[at] for key in expected | found}:
        score = scores.setdefault(kind, Score())
        score.add({k for k in expected if k[at] == kind}, {k for k in found if k[at] == kind})


def _endpoint(name: str, user_names: Iterable[str | None]) -> str:
    key = entity_key(name)
    if name == SELF or any(n is not None and entity_key(n) == key for n in user_names):
        return SELF
    return key


def _relationship_keys(
    triples: Iterable[tuple[str, str, str]], users: Sequence[str | None]
) -> set[RelKey]:
    out: set[RelKey] = set()
    for source, rel, target in triples:
        a, b = _endpoint(source, users), _endpoint(target, users)
        if rel in SYMMETRIC and b < a:
            a, b = b, a
        out.add((a, rel, b))
    return out


def score_message(report: QualityReport, message: CorpusMessage, got: Extraction) -> None:
    """Add one message's comparison to ``report``."""
    report.messages += 1
    want_entities = {(entity_key(n), t) for n, t in message.entities}
    got_entities = {(entity_key(e.name), e.type) for e in got.entities}
    report.entities.add(want_entities, got_entities)
    _by_type(report.entity_types, want_entities, got_entities, 1)

    users = (message.user_name, message.expected_user_name, got.user_name)
    want_rels = _relationship_keys(message.relationships, users)
    got_rels = _relationship_keys(((r.source, r.type, r.target) for r in got.relationships), users)
    report.relationships.add(want_rels, got_rels)
    _by_type(report.relationship_types, want_rels, got_rels, 1)

    want_name = {entity_key(message.expected_user_name)} if message.expected_user_name else set()
    got_name = {entity_key(got.user_name)} if got.user_name else set()
    report.user_names.add(want_name, got_name)

    for label, want, found in (
        ("entity", want_entities, got_entities),
        ("relationship", want_rels, got_rels),
        ("user_name", want_name, got_name),
    ):
        for item in sorted(found - want, key=str):
            report.errors.append(f"{message.id}: extra {label} {item}")
        for item in sorted(want - found, key=str):
            report.errors.append(f"{message.id}: missed {label} {item}")


async def evaluate(extractor: Extractor, corpus: Sequence[CorpusMessage]) -> QualityReport:
    """Run ``extractor`` over every message and score the results."""
    report = QualityReport()
    for message in corpus:
        score_message(report, message, await extractor.extract(message.as_input()))
    return report


def type_counts(corpus: Sequence[CorpusMessage]) -> Counter[str]:
    """How many expected entities of each type the corpus holds."""
    return Counter(t for m in corpus for _, t in m.entities)
