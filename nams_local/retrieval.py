"""Retrieval: five memory sources searched in parallel, merged into a few hits.

Reproduces provider-behavior §3 (the TypeScript provider 0.3.0) over any
``MemoryBackend``. Deliberate differences, each for a reason:

- no ``threshold`` is ever sent (hosted NAMS rejects unknown fields since October 2026);
- cross-session hits are ordered by the conversation list (newest first), not by which
  request finished first, so the same memory gives the same prompt every time;
- when the backend has ``user_message_search``, the cross-session source makes one call
  instead of 1 + 2·N; it yields the same hits as the per-conversation path;
- every lookup has a timeout, so a hanging backend costs a warning, not the model call;
- when the backend ``SupportsTurns`` (the local engine), the first round — the current
  conversation, long-term entities, reasoning steps, cross-session and the user's own
  entity, with the relationships of every entity found — is one ``recall_turn`` call
  instead of six to eight, so the query is embedded once and the sources' SQL runs in two
  jobs; its answer is what the separate calls would return, and every rule below applies
  to it unchanged. If it fails, the turn asks source by source (one warning more); if it
  times out, the turn has no memories (it has already waited the timeout);
- "nothing relevant" is an answer: when the backend's scores compare across queries
  (``capabilities.relevance_scores``, the local engine), a block opens only when one
  message or described entity hit that can be the answer reaches
  ``RetrievalOptions.relevance_gate`` (or the lower ``relevance_lexical_gate`` while
  sharing a question word, with the question's owner, rare among its hits), or when the
  user's graph facts whose relation the question names hold every content word of it
  ("where do I live?" -> LIVES_IN; not "what is my job title?" -> WORKS_AT); a
  closed one keeps no scored hit and no graph fact. In an open block, message and entity
  hits below ``relevance_floor`` are dropped before merging, and an entity below it is
  not expanded into graph hits (``retrieval_scores`` says why two numbers; a first-person
  question with at least one entity above the floor keeps every entity it found: "what
  do you remember about me?" is answered by the whole profile, as the seed's
  self-reference trap expects). Reasoning steps carry no score and are kept, as the
  provider keeps them. Backends without comparable scores (hosted NAMS) keep every hit.

Every failure is logged once through the ``MemoryLogger`` and the source counts as empty.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeVar, cast

from .backend import MemoryBackend, SupportsTurns
from .log import MemoryLogger, default_logger
from .models import (
    Conversation,
    ConversationSearchHits,
    Entity,
    EntityDetails,
    EntityRelationship,
    Message,
    ReasoningStep,
)
from .rerank import DEFAULT_RERANK_FLOOR, Reranker
from .retrieval_rerank import rerank_hits
from .retrieval_scores import (
    DEFAULT_LEXICAL_GATE,
    DEFAULT_RELEVANCE_FLOOR,
    DEFAULT_RELEVANCE_GATE,
    OPENING_HITS,
    Evidence,
    Relevance,
)
from .retrieval_terms import fallback_terms, query_tokens
from .retrieval_time import about_user, asks_about_past, interval, type_relevance
from .scope import Scope
from .turns import TurnRecall, TurnRequest

__all__ = [
    "DEFAULT_CROSS_SESSION_LIMIT",
    "DEFAULT_GRAPH_EXPANSION_LIMIT",
    "DEFAULT_LEXICAL_GATE",
    "DEFAULT_RELEVANCE_FLOOR",
    "DEFAULT_RELEVANCE_GATE",
    "MAX_TOTAL",
    "MemoryHit",
    "MemorySource",
    "RetrievalOptions",
    "retrieve_memories",
]

MemorySource = Literal["long-term", "graph", "conversation", "cross-session", "reasoning"]

#: Constants of the TypeScript provider (``RETRIEVAL``).
MAX_TOTAL = 12
MAX_LONGTERM = 5
MAX_REASONING = 6
MAX_TRIPLES = 5
CROSS_SEARCH_LIMIT = 4
DEFAULT_CROSS_SESSION_LIMIT = 5
DEFAULT_GRAPH_EXPANSION_LIMIT = 2
DIRECT_RESPONSE = "direct response"
#: Seconds one backend lookup may take before it counts as failed.
DEFAULT_LOOKUP_TIMEOUT = 10.0

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class MemoryHit:
    """One recalled memory (also what the ``query_memory`` tool returns).

    ``score`` is what the provider reports (an entity's confidence); ``relevance`` is the
    search score the hit was found with, where the backend gives one (not sent to tools).
    """

    content: str
    source: MemorySource
    type: str
    score: float | None = None
    #: A graph fact that no longer holds (shown with its interval, for a past question).
    superseded: bool = False
    relevance: float | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"content": self.content, "source": self.source, "type": self.type}
        if self.score is not None:
            out["score"] = self.score
        if self.superseded:
            out["superseded"] = True
        return out


@dataclass(frozen=True, slots=True)
class RetrievalOptions:
    cross_session_limit: int = DEFAULT_CROSS_SESSION_LIMIT
    graph_expansion_limit: int = DEFAULT_GRAPH_EXPANSION_LIMIT
    lookup_timeout: float = DEFAULT_LOOKUP_TIMEOUT
    logger: MemoryLogger = field(default_factory=default_logger)
    #: Drop message and entity hits scoring below this (0 keeps all). Applies only to
    #: backends whose scores compare across queries (``capabilities.relevance_scores``).
    relevance_floor: float = DEFAULT_RELEVANCE_FLOOR
    #: A block opens only when its best message or entity hit scores at least this (0:
    #: no gate); same backends as the floor (``retrieval_scores``).
    relevance_gate: float = DEFAULT_RELEVANCE_GATE
    #: ... or when one scores at least this and shares a question word rare among its hits.
    relevance_lexical_gate: float = DEFAULT_LEXICAL_GATE
    #: Rescores message and entity hits (``nams_local.rerank``; off by default). With one,
    #: hits it scores below ``rerank_floor`` are dropped, on every backend, instead of the
    #: search scores' floor and gate.
    reranker: Reranker | None = None
    rerank_floor: float = DEFAULT_RERANK_FLOOR


class _Lookups:
    """Runs backend calls with the timeout and the one-warning-per-failure rule."""

    def __init__(self, options: RetrievalOptions) -> None:
        self.options = options

    async def call(self, label: str, make: Callable[[], Awaitable[T]]) -> T | None:
        """``make()``'s result, or ``None`` after logging one warning for the failure."""
        try:
            return await asyncio.wait_for(make(), timeout=self.options.lookup_timeout)
        except asyncio.CancelledError:
            raise
        except TimeoutError:
            timeout = self.options.lookup_timeout
            self.options.logger.warn(label, TimeoutError(f"no answer within {timeout} s"))
        except Exception as exc:
            self.options.logger.warn(label, exc)
        return None


M = TypeVar("M")


def _checked(items: object, kind: type[M]) -> list[M]:
    """``items`` as a list of ``kind``, or ``TypeError``: a backend answering garbage
    costs its own source, not the whole retrieval."""
    if not isinstance(items, list) or not all(isinstance(i, kind) for i in items):
        raise TypeError(f"backend returned {type(items).__name__}, not a list of {kind.__name__}")
    return items


async def _steps(backend: MemoryBackend, conversation_id: str) -> list[ReasoningStep]:
    return _checked(await backend.list_steps(conversation_id), ReasoningStep)


def _entity_content(entity: Entity) -> str:
    name = (entity.name or "").strip()
    description = (entity.description or "").strip()
    if name and description:
        return f"{name} — {description}"
    return name or description


def _message_key(item: Message) -> str:
    return item.content


def _entity_key(item: Entity) -> str:
    return _entity_content(item)


async def _two_pass(
    lookups: _Lookups,
    label: str,
    query: str,
    search: Callable[[str], Awaitable[Sequence[T]]],
    key: Callable[[T], str],
    first: Sequence[T] | None = None,
) -> list[T]:
    """Pass 1: the whole query (``first``, when it was already run). If empty, pass 2: one
    search per fallback term, merged, de-duplicated by content and ranked by word overlap
    with the query (stable)."""

    def run(q: str) -> Callable[[], Awaitable[Sequence[T]]]:
        return lambda: search(q)

    if first is None:
        first = await lookups.call(f"{label} failed", run(query))
    if first:
        return list(first)
    terms = fallback_terms(query)
    if not terms:
        return []
    results = await asyncio.gather(
        *(lookups.call(f'{label} fallback ("{term}") failed', run(term)) for term in terms)
    )
    merged: list[T] = []
    seen: set[str] = set()
    for items in results:
        for item in items or []:
            k = key(item).strip()
            if not k or k in seen:
                continue
            seen.add(k)
            merged.append(item)
    wanted = query_tokens(query)
    return sorted(merged, key=lambda item: -len(query_tokens(key(item)) & wanted))


def _reasoning_hits(steps: Sequence[ReasoningStep], source: MemorySource) -> list[MemoryHit]:
    kind = "step" if source == "reasoning" else "reasoning"
    return [
        MemoryHit(content=s.reasoning, source=source, type=kind)
        for s in steps
        if s.action_taken == DIRECT_RESPONSE and s.reasoning
    ]


async def _cross_session(
    backend: MemoryBackend,
    lookups: _Lookups,
    scope: Scope,
    conversation_id: str,
    query: str,
    floor: Relevance,
) -> list[MemoryHit]:
    n = lookups.options.cross_session_limit
    if n <= 0:
        return []
    groups: list[tuple[list[Message], list[ReasoningStep]]]
    if backend.capabilities.user_message_search:

        async def grouped() -> list[ConversationSearchHits]:
            found = await backend.search_user_messages(
                scope.user_id,
                query,
                conversation_limit=n,
                per_conversation_limit=CROSS_SEARCH_LIMIT,
                exclude_conversation_id=conversation_id,
            )
            for group in _checked(found, ConversationSearchHits):
                _checked(group.messages, Message)
                _checked(group.steps, ReasoningStep)
            return found

        found = await lookups.call("cross-session searchUserMessages failed", grouped)
        groups = [(list(g.messages), list(g.steps)) for g in found or []]
    else:

        async def recent() -> list[Conversation]:
            found = await backend.list_conversations(user_id=scope.user_id, limit=n + 1)
            return _checked(found, Conversation)

        conversations = await lookups.call("cross-session listConversations failed", recent)
        others = [c.id for c in conversations or [] if c.id != conversation_id][:n]

        async def one(conv_id: str) -> tuple[list[Message], list[ReasoningStep]]:
            async def search() -> list[Message]:
                result = await backend.search_messages(conv_id, query, limit=CROSS_SEARCH_LIMIT)
                return _checked(result.items, Message)

            messages, steps = await asyncio.gather(
                lookups.call("cross-session searchMessages failed", search),
                lookups.call("cross-session listSteps failed", lambda: _steps(backend, conv_id)),
            )
            return messages or [], steps or []

        groups = list(await asyncio.gather(*(one(c) for c in others)))
    return _cross_hits(groups, floor)


def _cross_hits(
    groups: Sequence[tuple[Sequence[Message], Sequence[ReasoningStep]]], floor: Relevance
) -> list[MemoryHit]:
    """The cross-session bucket: each other conversation's messages above the floor, then
    its direct-response steps, de-duplicated by content, in conversation order."""
    hits: list[MemoryHit] = []
    seen: set[str] = set()
    for messages, steps in groups:
        candidates = [
            MemoryHit(content=m.content, source="cross-session", type="message", relevance=m.score)
            for m in messages
            if floor.keeps(m.score)
        ] + _reasoning_hits(steps, "cross-session")
        for hit in candidates:
            k = hit.content.strip()
            if k and k not in seen:
                seen.add(k)
                hits.append(hit)
    return hits


async def _graph_hits(
    backend: MemoryBackend,
    lookups: _Lookups,
    entities: Sequence[Entity],
    query: str,
    user: Entity | None = None,
    known: Mapping[str, EntityDetails] | None = None,
) -> list[MemoryHit]:
    """Up to ``MAX_TRIPLES`` facts of each root entity; ``known`` holds details already
    read (``recall_turn``), so only the other roots cost a ``get_entity`` call."""
    past = asks_about_past(query)
    limit = lookups.options.graph_expansion_limit
    roots = [e for e in entities if e.id][:limit] if limit != 0 else []
    if user is not None and limit != 0:
        # The user's own facts first, the ones the question names ahead of the rest.
        roots = [user, *(e for e in roots if e.id != user.id)]

    async def expand(root: Entity) -> list[MemoryHit]:
        async def details() -> EntityDetails:
            found = await backend.get_entity(root.id)
            if not isinstance(found, EntityDetails):
                raise TypeError(f"backend returned {type(found).__name__}, not EntityDetails")
            return found

        detail = (known or {}).get(root.id) or await lookups.call(
            f'getEntity failed for "{root.name}", skipping its relationships', details
        )
        subject_source: str | None = None
        if detail is not None:
            subject_source = (
                detail.canonical_name if detail.canonical_name is not None else detail.name
            )
        if subject_source is None:
            subject_source = root.name
        subject = (subject_source or "").strip()
        if not subject or detail is None:
            return []
        named = [
            r for r in detail.relationships if r.type.strip() and (r.target_name or "").strip()
        ]
        # What holds now; what held once only for a question about the past, newest
        # first and ahead of the present (it is what such a question is after).
        if root is user:
            named.sort(key=lambda r: -type_relevance(r.type, query))
        current = [r for r in named if r.valid_until is None]
        closed = sorted(
            (r for r in named if r.valid_until is not None),
            key=lambda r: (type_relevance(r.type, query), r.valid_until or ""),
            reverse=True,
        )
        triples = ([*closed, *current] if past else current)[:MAX_TRIPLES]
        return [
            MemoryHit(
                content=_triple(subject, r),
                source="graph",
                type=r.type.strip(),
                superseded=r.valid_until is not None,
            )
            for r in triples
        ]

    expanded = await asyncio.gather(*(expand(root) for root in roots))
    return [hit for hits in expanded for hit in hits]


def _wants_user(backend: MemoryBackend, query: str) -> bool:
    """Whether the turn looks up the user's own entity (``_user_entity``)."""
    return backend.capabilities.relationship_validity and about_user(query)


async def _user_entity(backend: MemoryBackend, lookups: _Lookups, query: str) -> Entity | None:
    """The user's own entity for a first-person question ("where do I live now?"), on a
    backend whose relationships know time (the local engine: its user entity is described
    as "the user (me)"). Other backends get no extra request: their traffic is unchanged."""
    if not _wants_user(backend, query):
        return None

    async def find() -> list[Entity]:
        return _checked((await backend.search_entities("me", "person", 1)).items, Entity)

    found = await lookups.call("searchEntities (the user) failed", find)
    return found[0] if found else None


def _triple(subject: str, rel: EntityRelationship) -> str:
    """``(subject)-[TYPE]->(other)``; an edge the backend marks ``incoming`` is written the
    way it points (hosted NAMS sends no direction, so its edges print as outgoing, as
    the TypeScript provider prints them)."""
    other = (rel.target_name or "").strip()
    label = rel.type.strip()
    if rel.valid_until is not None:  # no longer holds: the interval goes with it
        label = f"{label} {interval(rel.valid_from, rel.valid_until)}"
    if rel.direction == "incoming":
        return f"({other})-[{label}]->({subject})"
    return f"({subject})-[{label}]->({other})"


def _relevance(backend: MemoryBackend, opts: RetrievalOptions) -> Relevance:
    return Relevance.of(
        backend, opts.relevance_floor, opts.relevance_gate, opts.relevance_lexical_gate
    )


def _with_relevance(hit: MemoryHit, relevance: float) -> MemoryHit:
    return replace(hit, relevance=relevance)


#: ``_recall_turn``'s answer when the one call timed out (the turn gets no memories).
_TIMED_OUT = TurnRecall()


async def _recall_turn(
    backend: SupportsTurns,
    lookups: _Lookups,
    scope: Scope,
    conversation_id: str,
    query: str,
    limit: int,
) -> TurnRecall | None:
    """The first round in one call; ``None`` (after one warning) when it failed, so the
    turn asks source by source; ``_TIMED_OUT`` when it took the whole timeout."""
    n = lookups.options.cross_session_limit
    request = TurnRequest(
        conversation_id=conversation_id,
        user_id=scope.user_id,
        query=query,
        message_limit=limit,
        entity_limit=MAX_LONGTERM,
        conversation_limit=max(n, 0),
        per_conversation_limit=CROSS_SEARCH_LIMIT if n > 0 else 0,
        user_entity=_wants_user(cast(MemoryBackend, backend), query),
    )
    timeout = lookups.options.lookup_timeout
    try:
        found = await asyncio.wait_for(backend.recall_turn(request), timeout=timeout)
        if not isinstance(found, TurnRecall):
            raise TypeError(f"backend returned {type(found).__name__}, not a TurnRecall")
        return found
    except asyncio.CancelledError:
        raise
    except TimeoutError:
        lookups.options.logger.warn(
            "recallTurn failed", TimeoutError(f"no answer within {timeout} s")
        )
        return _TIMED_OUT
    except Exception as exc:
        lookups.options.logger.warn("recallTurn failed, searching source by source", exc)
        return None


def _round_robin(buckets: Sequence[Sequence[MemoryHit]], cap: int) -> list[MemoryHit]:
    merged: list[MemoryHit] = []
    if cap <= 0:
        return merged
    depth = max((len(b) for b in buckets), default=0)
    for i in range(depth):
        for bucket in buckets:
            if i < len(bucket):
                merged.append(bucket[i])
                if len(merged) >= cap:
                    return merged
    return merged


async def retrieve_memories(
    backend: MemoryBackend,
    scope: Scope,
    conversation_id: str,
    query: str,
    limit: int = 5,
    options: RetrievalOptions | None = None,
) -> list[MemoryHit]:
    """The memories relevant to ``query`` for this user and conversation, at most
    ``min(limit, 12)``, merged round-robin over [long-term, graph, conversation,
    cross-session, reasoning]."""
    opts = options or RetrievalOptions()
    lookups = _Lookups(opts)
    floor = _relevance(backend, opts)
    if opts.reranker is not None:  # its scores, not the search's, decide (after the search)
        floor = Relevance(opts.rerank_floor)

    async def search_current(q: str) -> list[Message]:
        result = await backend.search_messages(conversation_id, q, limit=limit)
        return _checked(result.items, Message)

    async def search_entities(q: str) -> list[Entity]:
        result = await backend.search_entities(q, limit=MAX_LONGTERM)
        return _checked(result.items, Entity)

    recall: TurnRecall | None = None
    if isinstance(backend, SupportsTurns):
        recall = await _recall_turn(backend, lookups, scope, conversation_id, query, limit)
        if recall is _TIMED_OUT:
            return []
    # With a reranker, the cross-session bucket keeps everything: the reranker's floor decides.
    cross_floor = floor if not opts.reranker else Relevance()
    if recall is not None:
        current, entities = await asyncio.gather(
            _two_pass(
                lookups, "searchMessages", query, search_current, _message_key, recall.messages
            ),
            _two_pass(
                lookups, "searchEntities", query, search_entities, _entity_key, recall.entities
            ),
        )
        found_steps: list[ReasoningStep] | None = recall.steps
        groups = [(g.messages, g.steps) for g in recall.cross_session]
        cross = _cross_hits(groups, cross_floor) if opts.cross_session_limit > 0 else []
        known: Mapping[str, EntityDetails] = recall.details
    else:
        current, entities, found_steps, cross = await asyncio.gather(
            _two_pass(lookups, "searchMessages", query, search_current, _message_key),
            _two_pass(lookups, "searchEntities", query, search_entities, _entity_key),
            lookups.call("listSteps failed", lambda: _steps(backend, conversation_id)),
            _cross_session(backend, lookups, scope, conversation_id, query, cross_floor),
        )
        known = {}
    if opts.reranker is not None:
        reranker = opts.reranker
        found = await lookups.call(
            f"reranker {reranker.name!r} failed, keeping the search order",
            lambda: rerank_hits(
                reranker, query, current, entities, cross, _entity_content, _with_relevance
            ),
        )
        if found is not None:
            current, entities, cross = found
        else:  # fail safe: the search scores decide, as without a reranker
            floor = _relevance(backend, opts)
        cross = [h for h in cross if floor.keeps(h.relevance)]
    evidence = [
        *(Evidence(m.score, m.content) for m in current[:OPENING_HITS]),
        *(Evidence.of_entity(e, _entity_content(e)) for e in entities),
        *(Evidence(h.relevance, h.content) for h in cross),
    ]
    opened = floor.opens(query, evidence)
    if recall is not None:
        user = recall.user if _wants_user(backend, query) else None
    else:
        user = await _user_entity(backend, lookups, query)
    if not opened and user is not None:
        # Facts of the user's that the question names and that hold all of it ("where do
        # I live?" -> LIVES_IN) are support: they open the block, with the hits above the floor.
        named = await _graph_hits(backend, lookups, [], query, user, known)
        opened = floor.facts_open(query, [(h.type, h.content) for h in named], evidence)
    if not opened:  # nothing looks like an answer: no scored hit, no graph fact
        current, entities = [], []
        cross = [h for h in cross if h.relevance is None]
    current = [m for m in current if floor.keeps(m.score)]
    relevant = [e for e in entities if floor.keeps(e.score)]
    # A question about the user ("what do you remember about me?") that finds one relevant
    # entity keeps the rest of what it found: the user's profile answers it as a whole.
    entities = entities if relevant and about_user(query) else relevant
    steps = found_steps or []
    graph = await _graph_hits(backend, lookups, entities, query, user, known) if opened else []

    seen: set[str] = set()

    def push(bucket: list[MemoryHit], hit: MemoryHit, alias: str | None = None) -> None:
        k = hit.content.strip()
        if not k or k in seen:
            return
        seen.add(k)
        if alias is not None and alias.strip():
            seen.add(alias.strip())
        bucket.append(hit)

    long_term: list[MemoryHit] = []
    for e in entities:
        push(
            long_term,
            MemoryHit(
                content=_entity_content(e),
                source="long-term",
                type=e.type if e.type is not None else "entity",
                score=e.confidence,
                relevance=e.score,
            ),
            alias=e.description if e.description is not None else e.name,
        )
    graph_bucket: list[MemoryHit] = []
    for hit in graph:
        push(graph_bucket, hit)
    conversation_bucket: list[MemoryHit] = []
    for m in current:
        hit = MemoryHit(content=m.content, source="conversation", type="message", relevance=m.score)
        push(conversation_bucket, hit)
    cross_bucket: list[MemoryHit] = []
    for hit in cross:
        push(cross_bucket, hit)
    reasoning_bucket: list[MemoryHit] = []
    for hit in _reasoning_hits(steps, "reasoning")[:MAX_REASONING]:
        push(reasoning_bucket, hit)

    buckets = [long_term, graph_bucket, conversation_bucket, cross_bucket, reasoning_bucket]
    return _round_robin(buckets, min(limit, MAX_TOTAL))
