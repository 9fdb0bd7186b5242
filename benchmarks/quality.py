"""Retrieval quality on conversational memory: evidence recall@k by search mode.

A deterministic set (``benchmarks._quality_data``, fixed seed) of multi-session chats with
planted facts (stated once, restated, contradicted later, buried in chatter) and one
question per fact naming its evidence messages and the entity that holds the current
value. The set is stored in the local engine, one workspace and one conversation per
user, and each question is asked three ways:

- **message search**: ``search_messages(conversation, question, 10)``;
- **entity search**: ``search_entities(question, 10)`` in the user's workspace;
- **memory block**: ``retrieve_memories(...)`` with ``limit=k``, the merged list a model
  sees (a question counts as recalled as far as its evidence messages are in the block,
  or fully when the fact's entity is).

Evidence recall@k is |evidence in the top k| / |evidence|, averaged over questions, for
k = 1, 5, 10, per question type, in text-only, vector-only and the engine's default
(hybrid) mode, plus hybrid at other vector weights (``--weights``) to show where the
default sits. ``--locomo FILE`` scores a dataset in the LoCoMo JSON format the same way
(turn-level evidence ``D1:3``; per category; no entities there, so no entity rows).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from backends.sqlite import SQLiteBackend
from backends.sqlite.search import DEFAULT_HYBRID_WEIGHT
from nams_local.backend import MAX_BULK_MESSAGES, MemoryBackend
from nams_local.embeddings import BaseEmbedder
from nams_local.models import Entity, Message, NewMessage, SearchMode, SearchResult
from nams_local.rerank import (
    DEFAULT_RERANK_FLOOR,
    Reranker,
    RerankerUnavailableError,
    reranker_from_path,
)
from nams_local.retrieval import (
    DEFAULT_LEXICAL_GATE,
    DEFAULT_RELEVANCE_FLOOR,
    DEFAULT_RELEVANCE_GATE,
    MemoryHit,
    RetrievalOptions,
    retrieve_memories,
)
from nams_local.scope import Scope

from ._common import (
    OptionGroup,
    Progress,
    add_embedder_options,
    add_workload_options,
    chosen_embedder,
    positive,
    say,
)
from ._quality_data import QUESTION_TYPES, QualityQuestion, QualitySet, generate_quality
from ._quality_household import HOUSEHOLD_TYPES, generate_household
from ._report import BarGroup, add_report_options, machine, publish

__all__ = ["Corpus", "add_synthetic_options", "load_locomo", "main", "recall", "synthetic_corpus"]

NAME = "quality"
KS = (1, 5, 10)
#: Issue 13: messages recall@10 >= 0.92 on the synthetic set (an earlier issue asked 0.90).
TARGET_RECALL_AT_10 = 0.92
TARGET_MARGIN_POINTS = 5.0
LOCOMO_CATEGORIES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}


# -- corpora ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class CorpusMessage:
    key: str
    role: str
    content: str


@dataclass(frozen=True, slots=True)
class CorpusEntity:
    key: str
    name: str
    type: str
    description: str

    @property
    def content(self) -> str:
        """As the memory block renders an entity (``retrieval._entity_content``)."""
        return f"{self.name} — {self.description}"


@dataclass(frozen=True, slots=True)
class CorpusUser:
    user_id: str
    messages: tuple[CorpusMessage, ...]
    entities: tuple[CorpusEntity, ...] = ()


@dataclass(frozen=True, slots=True)
class CorpusQuestion:
    user_id: str
    type: str
    question: str
    evidence: tuple[str, ...]
    entity: str | None = None


@dataclass(frozen=True)
class Corpus:
    """Users (one conversation each), their entities, and questions with evidence keys."""

    name: str
    users: tuple[CorpusUser, ...]
    questions: tuple[CorpusQuestion, ...]
    types: tuple[str, ...]
    notes: dict[str, Any] = field(default_factory=dict)
    #: Questions the memory cannot answer (no evidence): precision of the relevance floor.
    negatives: tuple[CorpusQuestion, ...] = ()

    @property
    def message_count(self) -> int:
        return sum(len(u.messages) for u in self.users)


def synthetic_corpus(args: argparse.Namespace) -> Corpus:
    data = generate_quality(
        users=args.users,
        sessions=args.sessions,
        turns_per_session=args.turns,
        facts_per_user=args.facts,
        seed=args.seed,
        distractor_entities=args.distractor_entities,
    )
    return _corpus("synthetic", data, QUESTION_TYPES)


def household_corpus(args: argparse.Namespace) -> Corpus:
    """The second, independently generated set (``_quality_household``)."""
    data = generate_household(
        users=args.household_users,
        sessions=args.sessions,
        turns_per_session=args.turns,
        seed=args.seed,
    )
    return _corpus("household", data, HOUSEHOLD_TYPES)


def _corpus(name: str, data: QualitySet, types: tuple[str, ...]) -> Corpus:
    """A generated set as the benchmark scores it."""
    users = tuple(
        CorpusUser(
            u.user_id,
            tuple(CorpusMessage(m.key, m.role, m.content) for m in u.messages),
            tuple(CorpusEntity(e.key, e.name, e.type, e.description) for e in u.entities),
        )
        for u in data.users
    )

    def question(q: QualityQuestion) -> CorpusQuestion:
        return CorpusQuestion(q.user_id, q.type, q.question, q.evidence, q.entity)

    return Corpus(
        name,
        users,
        tuple(question(q) for q in data.questions),
        types,
        {"seed": data.seed},
        negatives=tuple(question(q) for q in data.negatives),
    )


_EVIDENCE = re.compile(r"D\d+:\d+")


def load_locomo(path: Path) -> Corpus:
    """A LoCoMo-format file: a list of samples with ``conversation`` and ``qa``.

    Each sample is one user and one conversation; its sessions (``session_N`` lists of
    ``{"speaker", "dia_id", "text"}``) are stored in order, ``speaker_a`` as the user and
    ``speaker_b`` as the assistant. Evidence ids (``D1:3``) not found in the sample are
    dropped; questions left with no evidence are skipped and counted.
    """
    samples = json.loads(path.read_text())
    if isinstance(samples, dict):
        samples = [samples]
    users: list[CorpusUser] = []
    questions: list[CorpusQuestion] = []
    skipped = 0
    for n, sample in enumerate(samples):
        conv = sample["conversation"]
        user_id = f"locomo-{sample.get('sample_id', n)}"
        speaker_a = conv.get("speaker_a")
        numbers = sorted(int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k))
        messages: list[CorpusMessage] = []
        for number in numbers:
            for turn in conv[f"session_{number}"]:
                text = str(turn.get("text", "")).strip()
                if turn.get("blip_caption"):
                    text = f"{text} [shares a photo: {turn['blip_caption']}]".strip()
                if not text:
                    continue
                role = "user" if turn.get("speaker") == speaker_a else "assistant"
                messages.append(CorpusMessage(f"{user_id}:{turn['dia_id']}", role, text))
        keys = {m.key for m in messages}
        users.append(CorpusUser(user_id, tuple(messages)))
        for qa in sample.get("qa", []):
            found = _EVIDENCE.findall(" ".join(str(e) for e in qa.get("evidence", [])))
            evidence = tuple(
                dict.fromkeys(f"{user_id}:{e}" for e in found if f"{user_id}:{e}" in keys)
            )
            if not evidence or not str(qa.get("question", "")).strip():
                skipped += 1
                continue
            category = int(qa.get("category", 0))
            label = f"{category} {LOCOMO_CATEGORIES.get(category, 'other')}"
            questions.append(CorpusQuestion(user_id, label, str(qa["question"]), evidence))
    types = tuple(sorted({q.type for q in questions}))
    notes = {"file": str(path), "questions_skipped_without_evidence": skipped}
    return Corpus(f"locomo ({path.name})", tuple(users), tuple(questions), types, notes)


# -- modes -----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ModeSpec:
    label: str
    mode: SearchMode | None
    weight: float


def _modes(weights: Sequence[float]) -> list[ModeSpec]:
    out = [
        ModeSpec("text", "text", DEFAULT_HYBRID_WEIGHT),
        ModeSpec("vector", "vector", DEFAULT_HYBRID_WEIGHT),
        ModeSpec("default", None, DEFAULT_HYBRID_WEIGHT),
    ]
    out += [ModeSpec(f"hybrid w={w:g}", "hybrid", w) for w in weights if w != DEFAULT_HYBRID_WEIGHT]
    return out


class ForcedMode:
    """A backend view whose message and entity searches always run in one mode.

    How the memory block is measured per mode: ``retrieve_memories`` asks for the default.
    A forced mode hides the engine's one-call turn (``SupportsTurns``: it searches in the
    default mode), so retrieval asks source by source, each search in the forced mode.
    """

    def __init__(self, inner: SQLiteBackend, mode: SearchMode | None) -> None:
        self._inner = inner
        self._mode = mode

    def __getattr__(self, name: str) -> Any:
        if self._mode is not None and name in ("recall_turn", "persist_turn"):
            raise AttributeError(name)
        return getattr(self._inner, name)

    async def search_messages(
        self, conversation_id: str, query: str, limit: int = 10, mode: SearchMode | None = None
    ) -> SearchResult[Message]:
        return await self._inner.search_messages(conversation_id, query, limit, self._mode)

    async def search_entities(
        self,
        query: str,
        type: str | None = None,
        limit: int = 10,
        mode: SearchMode | None = None,
    ) -> SearchResult[Entity]:
        return await self._inner.search_entities(query, type, limit, self._mode)


#: The memory block rows compare rankings, so no floor or gate there (the sweeps measure them).
UNFILTERED = RetrievalOptions(relevance_floor=0.0, relevance_gate=0.0, relevance_lexical_gate=0.0)
TARGET_PRECISION = 0.90


# -- scoring ---------------------------------------------------------------------------------
def recall(evidence: Sequence[str], ranked: Sequence[str], k: int) -> float:
    top = set(ranked[:k])
    return sum(1 for e in evidence if e in top) / len(evidence)


@dataclass
class Stored:
    """What ingest wrote for one user: its backend view, conversation and id maps."""

    backend: SQLiteBackend
    conversation_id: str
    message_ids: dict[str, str]
    entity_ids: dict[str, str]
    contents: dict[str, str]  # message or entity key -> the text the memory block shows


async def _ingest(
    root: SQLiteBackend, corpus: Corpus, quiet: bool
) -> tuple[dict[str, Stored], float]:
    progress = Progress("ingest", corpus.message_count, enabled=not quiet)
    stored: dict[str, Stored] = {}
    done = 0
    start = time.perf_counter()
    for user in corpus.users:
        ws = root.for_workspace(f"quality-{user.user_id}")
        conv = await ws.create_conversation(user.user_id)
        message_ids: dict[str, str] = {}
        contents: dict[str, str] = {}
        for i in range(0, len(user.messages), MAX_BULK_MESSAGES):
            batch = user.messages[i : i + MAX_BULK_MESSAGES]
            new = [NewMessage(role=m.role, content=m.content) for m in batch]
            written = await ws.add_messages(conv.id, new)
            for m, w in zip(batch, written, strict=True):
                message_ids[m.key] = w.id
                contents[m.key] = m.content
            done += len(batch)
            progress.update(done)
        entity_ids: dict[str, str] = {}
        for e in user.entities:
            entity_ids[e.key] = (await ws.add_entity(e.name, e.type, e.description)).id
            contents[e.key] = e.content
        stored[user.user_id] = Stored(ws, conv.id, message_ids, entity_ids, contents)
    lane = root.store.vector_lane
    if lane is not None:  # every vector written before the first question
        await lane.drained()
    return stored, time.perf_counter() - start


@dataclass
class Scores:
    """recall@k samples by (target, mode label, question type, k)."""

    samples: dict[tuple[str, str, str, int], list[float]] = field(
        default_factory=lambda: defaultdict(list)
    )

    def add(self, target: str, mode: str, qtype: str, k: int, value: float) -> None:
        self.samples[(target, mode, qtype, k)].append(value)

    def mean(self, target: str, mode: str, k: int, qtype: str | None = None) -> float | None:
        values = [
            v
            for (t, m, q, kk), vs in self.samples.items()
            if t == target and m == mode and kk == k and (qtype is None or q == qtype)
            for v in vs
        ]
        return sum(values) / len(values) if values else None


async def _score(
    corpus: Corpus, stored: dict[str, Stored], modes: list[ModeSpec], quiet: bool
) -> Scores:
    scores = Scores()
    total = len(corpus.questions) * len(modes)
    progress = Progress("questions x modes", total, enabled=not quiet)
    done = 0
    for spec in modes:
        for s in stored.values():
            s.backend.hybrid_weight = spec.weight
        for q in corpus.questions:
            s = stored[q.user_id]
            evidence_ids = [s.message_ids[e] for e in q.evidence]
            found = await s.backend.search_messages(
                s.conversation_id, q.question, max(KS), spec.mode
            )
            ranked = [m.id for m in found.items]
            for k in KS:
                scores.add("messages", spec.label, q.type, k, recall(evidence_ids, ranked, k))
            if q.entity is not None:
                hits = await s.backend.search_entities(q.question, None, max(KS), spec.mode)
                ranked = [e.id for e in hits.items]
                for k in KS:
                    value = recall([s.entity_ids[q.entity]], ranked, k)
                    scores.add("entities", spec.label, q.type, k, value)
            view = cast(MemoryBackend, ForcedMode(s.backend, spec.mode))
            scope = Scope(user_id=q.user_id, conversation_id=s.conversation_id)
            wanted = [s.contents[e] for e in q.evidence]
            entity_text = s.contents[q.entity] if q.entity is not None else None
            for k in KS:
                block = await retrieve_memories(
                    view, scope, s.conversation_id, q.question, k, UNFILTERED
                )
                shown = [h.content for h in block]
                value = recall(wanted, shown, k)
                if entity_text is not None and entity_text in shown[:k]:
                    value = 1.0
                scores.add("memory block", spec.label, q.type, k, value)
            done += 1
            progress.update(done)
    for s in stored.values():
        s.backend.hybrid_weight = DEFAULT_HYBRID_WEIGHT
    return scores


#: (floor, gate, lexical gate): the floor alone (gate 0), then the default floor under one
#: gate (lexical support off), then under both tests (``retrieval_scores``).
SETTINGS = (
    *((f, 0.0, 0.0) for f in (0.0, 0.3, 0.4, 0.5, 0.55, 0.6, 0.65)),
    *((DEFAULT_RELEVANCE_FLOOR, g, 0.0) for g in (0.55, 0.6, 0.625, 0.65, 0.7)),
    *(
        (DEFAULT_RELEVANCE_FLOOR, g, lex)
        for g, lex in (
            (0.625, 0.5),
            (0.65, 0.5),
            (0.65, 0.55),
            (0.675, 0.5),
            (0.675, 0.525),
            (0.675, 0.55),
            (0.7, 0.55),
            (0.7, 0.6),
        )
    ),
)
DEFAULT_SETTING = (DEFAULT_RELEVANCE_FLOOR, DEFAULT_RELEVANCE_GATE, DEFAULT_LEXICAL_GATE)


def _setting_key(floor: float, gate: float, lexical: float) -> str:
    key = f"floor {floor:g} gate {gate:g}"
    return f"{key} lexical {lexical:g}" if lexical > 0 else key


async def _floor_sweep(
    corpus: Corpus,
    stored: dict[str, Stored],
    settings: Sequence[tuple[float, float, float]],
    reranker: Reranker | None = None,
) -> dict[str, Any]:
    """Per (relevance floor, gate, lexical gate), default mode: the memory block's
    recall@5/@10 on the answerable questions, and its precision on the unanswerable ones
    (the share that get no block); with ``reranker``, one more row: the reranker at its
    default floor."""
    out: dict[str, Any] = {}
    runs: list[tuple[str, RetrievalOptions]] = [
        (
            _setting_key(f, g, lex),
            RetrievalOptions(relevance_floor=f, relevance_gate=g, relevance_lexical_gate=lex),
        )
        for f, g, lex in settings
    ]
    if reranker is not None:
        runs.append((f"reranker {DEFAULT_RERANK_FLOOR:g}", RetrievalOptions(reranker=reranker)))
    for key, options in runs:
        recalls: dict[int, list[float]] = {5: [], 10: []}
        for q in corpus.questions:
            s = stored[q.user_id]
            scope = Scope(user_id=q.user_id, conversation_id=s.conversation_id)
            wanted = [s.contents[e] for e in q.evidence]
            entity_text = s.contents[q.entity] if q.entity is not None else None
            for k in recalls:
                block = await retrieve_memories(
                    s.backend, scope, s.conversation_id, q.question, k, options
                )
                shown = [h.content for h in block]
                value = recall(wanted, shown, k)
                if entity_text is not None and entity_text in shown:
                    value = 1.0
                recalls[k].append(value)
        empty = 0
        opened: list[dict[str, Any]] = []
        for q in corpus.negatives:
            s = stored[q.user_id]
            scope = Scope(user_id=q.user_id, conversation_id=s.conversation_id)
            block = await retrieve_memories(
                s.backend, scope, s.conversation_id, q.question, 5, options
            )
            empty += not block
            if block:
                opened.append(_false_block(q, block))
        out[key] = {
            "block_recall@5": _mean(recalls[5]),
            "block_recall@10": _mean(recalls[10]),
            "precision_unanswerable": empty / len(corpus.negatives) if corpus.negatives else None,
            "false_blocks": len(opened),
        }
        if key == _setting_key(*DEFAULT_SETTING):
            out[key]["false_block_list"] = opened
    return out


def _false_block(q: CorpusQuestion, block: Sequence[MemoryHit]) -> dict[str, Any]:
    """An unanswerable question that got a block, with what the block showed (source,
    type, search score, text), so a reader can see what opened it."""
    hits = [
        {
            "source": h.source,
            "type": h.type,
            "relevance": None if h.relevance is None else round(h.relevance, 3),
            "content": h.content[:120],
        }
        for h in block
    ]
    return {"user": q.user_id, "question": q.question, "block": hits}


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


# -- one corpus ------------------------------------------------------------------------------
TARGETS = ("messages", "entities", "memory block")


def _summary(corpus: Corpus, scores: Scores, modes: list[ModeSpec]) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for target in TARGETS:
        rows: dict[str, Any] = {}
        for spec in modes:
            overall = {f"@{k}": scores.mean(target, spec.label, k) for k in KS}
            if all(v is None for v in overall.values()):
                continue
            by_type = {
                qtype: {f"@{k}": scores.mean(target, spec.label, k, qtype) for k in KS}
                for qtype in corpus.types
            }
            rows[spec.label] = {"overall": overall, "by_type": by_type}
        if rows:
            table[target] = rows
    counts = {t: sum(1 for q in corpus.questions if q.type == t) for t in corpus.types}
    return {
        "corpus": corpus.name,
        "users": len(corpus.users),
        "messages": corpus.message_count,
        "entities": sum(len(u.entities) for u in corpus.users),
        "questions": len(corpus.questions),
        "questions_by_type": counts,
        "notes": corpus.notes,
        "recall": table,
    }


def _verdict(summary: dict[str, Any]) -> dict[str, Any]:
    rows = summary["recall"]["messages"]
    default = rows["default"]["overall"]["@10"]
    best_single = max(rows["text"]["overall"]["@10"], rows["vector"]["overall"]["@10"])
    best_label = max(rows, key=lambda label: (rows[label]["overall"]["@10"], label == "default"))
    at_default = summary.get("floor_sweep", {}).get(_setting_key(*DEFAULT_SETTING), {})
    precision = at_default.get("precision_unanswerable")
    return {
        "precision_unanswerable_at_default_floor": precision,
        "meets_precision_target": precision is not None and precision >= TARGET_PRECISION,
        "message_recall_at_10_default": default,
        "meets_recall_target": default >= TARGET_RECALL_AT_10,
        "margin_points_over_best_single_mode": (default - best_single) * 100,
        "meets_margin_target": (default - best_single) * 100 >= TARGET_MARGIN_POINTS,
        "best_mode_at_10": best_label,
    }


async def _run_corpus(
    args: argparse.Namespace,
    corpus: Corpus,
    embedder: BaseEmbedder,
    db: Path,
    reranker: Reranker | None = None,
) -> dict[str, Any]:
    root = SQLiteBackend(db, embedder=embedder)
    try:
        say(args, f"[{NAME}] {corpus.name}: storing {corpus.message_count} messages")
        stored, ingest_s = await _ingest(root, corpus, args.quiet)
        modes = _modes(args.weights)
        say(
            args,
            f"[{NAME}] {corpus.name}: {len(corpus.questions)} questions x {len(modes)} modes",
        )
        start = time.perf_counter()
        scores = await _score(corpus, stored, modes, args.quiet)
        score_s = time.perf_counter() - start
        settings = list(dict.fromkeys([*SETTINGS, DEFAULT_SETTING]))
        sweep = await _floor_sweep(corpus, stored, settings, reranker)
    finally:
        await root.aclose()
    summary = _summary(corpus, scores, modes)
    summary["seconds"] = {"ingest": ingest_s, "questions": score_s}
    summary["floor_sweep"] = sweep
    summary["unanswerable_questions"] = len(corpus.negatives)
    summary["verdict"] = _verdict(summary)
    return summary


# -- report ----------------------------------------------------------------------------------
def _fmt(value: float | None) -> str:
    return "   -" if value is None else f"{value:.2f}"


def _render_corpus(summary: dict[str, Any]) -> list[str]:
    lines = [
        "",
        f"=== {summary['corpus']}: {summary['users']} users, {summary['messages']} messages, "
        f"{summary['entities']} entities, {summary['questions']} questions "
        f"({', '.join(f'{t} {n}' for t, n in summary['questions_by_type'].items())})",
        "",
        f"  {'evidence recall@k':<14} {'mode':<14} {'@1':>5} {'@5':>5} {'@10':>5}",
    ]
    for target, rows in summary["recall"].items():
        for label, row in rows.items():
            o = row["overall"]
            lines.append(
                f"  {target:<14} {label:<14} {_fmt(o['@1']):>5} {_fmt(o['@5']):>5} "
                f"{_fmt(o['@10']):>5}"
            )
    skipped = summary["notes"].get("questions_skipped_without_evidence")
    if skipped:
        lines.append(f"  ({skipped} questions without evidence in the file were skipped)")
    types = list(summary["questions_by_type"])
    for target, rows in summary["recall"].items():
        lines += ["", f"  {target} recall@10 by question type"]
        lines.append(f"  {'mode':<14} " + " ".join(f"{t[:14]:>14}" for t in types))
        for label, row in rows.items():
            cells = " ".join(f"{_fmt(row['by_type'][t]['@10']):>14}" for t in types)
            lines.append(f"  {label:<14} {cells}")
    lines += [
        "",
        f"  relevance floor and gate sweep (default mode; precision = share of the "
        f"{summary['unanswerable_questions']} unanswerable questions that get no block)",
        f"  {'setting':<34} {'block R@5':>10} {'block R@10':>11} {'precision':>10}",
    ]
    for setting, row in summary["floor_sweep"].items():
        mark = " <- default" if setting == _setting_key(*DEFAULT_SETTING) else ""
        lines.append(
            f"  {setting:<34} {_fmt(row['block_recall@5']):>10} "
            f"{_fmt(row['block_recall@10']):>11} {_fmt(row['precision_unanswerable']):>10}{mark}"
        )
    v = summary["verdict"]
    if v["precision_unanswerable_at_default_floor"] is not None:
        lines += [
            "",
            f"  precision on unanswerable questions at the default floor "
            f"{DEFAULT_RELEVANCE_FLOOR:g}, gate {DEFAULT_RELEVANCE_GATE:g} and lexical gate "
            f"{DEFAULT_LEXICAL_GATE:g}: "
            f"{v['precision_unanswerable_at_default_floor']:.3f} "
            f"(target >= {TARGET_PRECISION:.2f}: "
            f"{'met' if v['meets_precision_target'] else 'MISSED'})",
        ]
        false = summary["floor_sweep"][_setting_key(*DEFAULT_SETTING)]["false_block_list"]
        if false:
            lines.append(f"  {len(false)} got a block (its best-scored hit; all in the JSON):")
        for item in false:
            scored = [h for h in item["block"] if h["relevance"] is not None]
            first = max(scored, key=lambda h: h["relevance"]) if scored else item["block"][0]
            lines.append(
                f"    {item['user']}: {item['question']!r} <- {first['source']}/"
                f"{first['type']} {first['relevance']} {first['content'][:60]!r}"
            )
    lines += [
        "",
        f"  message search recall@10, default mode: {v['message_recall_at_10_default']:.3f} "
        f"(target >= {TARGET_RECALL_AT_10:.2f}: "
        f"{'met' if v['meets_recall_target'] else 'MISSED'})",
        f"  default minus the better of text-only / vector-only at @10: "
        f"{v['margin_points_over_best_single_mode']:+.1f} points (target >= "
        f"+{TARGET_MARGIN_POINTS:.0f}: {'met' if v['meets_margin_target'] else 'MISSED'}); "
        f"best mode at @10: {v['best_mode_at_10']}",
    ]
    return lines


def render(results: dict[str, Any]) -> str:
    lines = [
        f"nams-local benchmark: {NAME}",
        f"  embedder {results['embedder']}; default hybrid weight (vector share) "
        f"{DEFAULT_HYBRID_WEIGHT}; recall = |evidence in top k| / |evidence|, mean over questions",
        "  memory block: retrieve_memories(limit=k), no relevance floor (the sweep below each "
        "set adds it); a question is fully recalled there when the fact's entity is in the block",
    ]
    for summary in results["corpora"]:
        lines += _render_corpus(summary)
    return "\n".join(lines)


def _panels(results: dict[str, Any]) -> list[BarGroup]:
    panels: list[BarGroup] = []
    for summary in results["corpora"]:
        recall_rows = summary["recall"]
        labels = list(recall_rows["messages"])
        targets = list(recall_rows)
        values = {
            label: [
                recall_rows[t].get(label, {}).get("overall", {}).get("@10") or 0.0 for t in targets
            ]
            for label in labels
        }
        panels.append(
            BarGroup(
                f"{summary['corpus']}: recall@10", "recall@10", targets, values, TARGET_RECALL_AT_10
            )
        )
        types = list(summary["questions_by_type"])
        by_type = {
            label: [recall_rows["messages"][label]["by_type"][t]["@10"] or 0.0 for t in types]
            for label in labels
        }
        panels.append(
            BarGroup(f"{summary['corpus']}: message search by type", "recall@10", types, by_type)
        )
    return panels


# -- entry point -----------------------------------------------------------------------------
def _weights(value: str) -> list[float]:
    try:
        weights = [float(w) for w in value.split(",") if w.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of numbers: {value!r}") from None
    if any(not 0.0 <= w <= 1.0 for w in weights):
        raise argparse.ArgumentTypeError("weights are from 0 to 1")
    return weights


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"python -m benchmarks {NAME}",
        description="Evidence recall@k of message search, entity search and the memory "
        "block, by search mode, on a synthetic multi-session set (and LoCoMo files).",
    )
    data = add_synthetic_options(parser, users=30)
    data.add_argument(
        "--locomo", type=Path, action="append", default=[], help="also score this LoCoMo JSON file"
    )
    data.add_argument("--no-synthetic", action="store_true", help="score only the --locomo files")
    data.add_argument(
        "--household-users",
        type=int,
        default=30,
        help="users of the second (household) set, 0 to skip it, default: %(default)s",
    )
    engine = parser.add_argument_group("engine")
    add_embedder_options(engine)
    engine.add_argument(
        "--weights",
        type=_weights,
        default=[0.3, 0.7],
        help="extra hybrid vector weights to compare, default: 0.3,0.7",
    )
    engine.add_argument(
        "--reranker",
        type=Path,
        default=None,
        help="a local cross-encoder (an ONNX folder or a sentence-transformers model on "
        "disk; never downloaded): adds the memory block with it to the sweep",
    )
    add_report_options(parser)
    return parser


def add_synthetic_options(parser: argparse.ArgumentParser, *, users: int) -> OptionGroup:
    """The synthetic set's size options (``quality`` and ``peers`` share the set)."""
    data = parser.add_argument_group("synthetic set")
    add_workload_options(data, users=users, seed=7)
    data.add_argument("--sessions", type=positive, default=6, help="per user, default: %(default)s")
    data.add_argument(
        "--turns", type=positive, default=16, help="per session, default: %(default)s"
    )
    data.add_argument("--facts", type=positive, default=8, help="per user, default: %(default)s")
    data.add_argument(
        "--distractor-entities", type=int, default=20, help="per user, default: %(default)s"
    )
    return data


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.no_synthetic and not args.locomo:
        parser.error("--no-synthetic needs at least one --locomo FILE")
    started = machine()
    embedder: BaseEmbedder = chosen_embedder(args)
    corpora: list[Corpus] = [] if args.no_synthetic else [synthetic_corpus(args)]
    if not args.no_synthetic and args.household_users > 0:
        corpora.append(household_corpus(args))
    for path in args.locomo:
        try:
            corpora.append(load_locomo(path))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"[{NAME}] cannot read {path} as LoCoMo JSON: {exc}")
            return 2
    try:
        reranker = reranker_from_path(args.reranker) if args.reranker is not None else None
    except RerankerUnavailableError as exc:
        print(f"[{NAME}] cannot use the reranker: {exc}")
        return 2
    summaries = []
    with tempfile.TemporaryDirectory(prefix="nams-bench-quality-") as tmp:
        for i, corpus in enumerate(corpora):
            db = Path(tmp) / f"quality-{i}.sqlite3"
            summaries.append(asyncio.run(_run_corpus(args, corpus, embedder, db, reranker)))
    results: dict[str, Any] = {
        "machine": started,
        "embedder": embedder.name,
        "default_hybrid_weight": DEFAULT_HYBRID_WEIGHT,
        "reranker": reranker.name if reranker is not None else None,
        "corpora": summaries,
    }
    publish(args, NAME, results, render(results), argv=argv, panels=_panels(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
