"""The retrieval cost of one chat turn against the local SQLite engine.

One turn is one ``retrieve_memories(...)`` call with ``limit=6`` (the middleware default),
reading all five memory sources: long-term entities, graph expansion of the best entities,
the current conversation, the user's other conversations (cross-session) and the
conversation's reasoning steps. For each size (``--sizes 10000,100000``) the benchmark:

1. **builds a store** from the seeded workload (``benchmarks._workload``): messages in
   bulks of at most 100, entities one ``add_entity`` each, relationships between them (so
   graph expansion has edges to read) and a few reasoning steps per conversation (two in
   three with ``action_taken="direct response"``, the ones retrieval keeps). With ``--db``
   the build is kept and a later run with the same sizes, seed and embedder reuses it: a
   JSON sidecar ``<db>.turn.json`` records what was built, and a database without a
   matching sidecar is refused rather than silently measured.
2. **measures turns**: every turn asks a distinct query (``distinct_queries``, so the
   embedder's query cache can only help within a turn) against a random user's random
   conversation, through a proxy that counts and times every backend call by method and by
   memory source. Three kinds of turn are interleaved in a seeded random order, so machine
   noise spreads over all of them:

   - ``native``: the engine's capabilities as they are (cross-session is one
     ``search_user_messages`` call);
   - ``per-conversation``: the same proxy with ``user_message_search`` hidden, so
     cross-session takes the path the hosted API needs (``list_conversations`` then a
     search and a step list per other conversation: 1 + 2·N calls);
   - ``pre-embedded`` (diagnostic): a native turn whose timer also covers one
     ``embed_query`` of the fresh query made just before ``retrieve_memories``, so the
     concurrent searches all find the vector in the query cache: what a turn would cost if
     the query were embedded once per turn (see ``model runs`` in the table);
   - ``solo``: each source's backend calls run alone, one after another, with the query
     vector already cached, plus the bare ``embed_query`` of the fresh query: what each
     source costs without the others competing for the store's threads and the CPU.

Run ``python -m benchmarks turn --help`` for the options.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import inspect
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

import httpx

from backends.hosted import HostedBackend
from backends.sqlite import SQLiteBackend
from nams_local.backend import MAX_BULK_MESSAGES, Capabilities, MemoryBackend
from nams_local.config import API_KEY_ENV, ENDPOINT_ENV, open_hosted_backend
from nams_local.embeddings import BaseEmbedder, HashingEmbedder, Matrix, Vector, default_embedder
from nams_local.models import (
    ConversationSearchHits,
    EntityDetails,
    NewMessage,
    SearchResult,
)
from nams_local.persistence import persist_step
from nams_local.retrieval import (
    CROSS_SEARCH_LIMIT,
    DEFAULT_CROSS_SESSION_LIMIT,
    DEFAULT_GRAPH_EXPANSION_LIMIT,
    MAX_LONGTERM,
    RetrievalOptions,
    retrieve_memories,
)
from nams_local.scope import Scope

from ._common import Progress, non_negative, positive, say
from ._http import CountingTransport, LoopbackServer
from ._report import BarGroup, add_report_options, publish
from ._workload import (
    Workload,
    chunks,
    distinct_queries,
    generate,
    reasoning_steps,
    relationships,
)
from .ingest_search import _file_size, _machine, _mb, percentile

__all__ = ["main"]

NAME = "turn"
#: ``MemoryConfig.max_memories``: how many memories the middleware asks for per turn.
TURN_LIMIT = 6
#: Sidecar format; bump when what is built changes, so old databases are refused.
MARKER_FORMAT = 1
SOURCES = ("long-term", "graph", "conversation", "cross-session", "reasoning")
METHOD_ORDER = (
    "search_entities",
    "get_entity",
    "search_messages",
    "list_steps",
    "search_user_messages",
    "list_conversations",
)
TurnKind = Literal["native", "per-conversation", "pre-embedded", "solo", "loopback", "hosted"]
SERIES_LABELS: dict[str, str] = {
    "native": "in-process (one search_user_messages call)",
    "per-conversation": "in-process, user_message_search hidden",
    "pre-embedded": "in-process, query embedded first (diag.)",
    "loopback": "HostedBackend -> nams-local serve (loopback)",
    "hosted": "HostedBackend -> hosted NAMS",
}
#: Series that talk HTTP, and the ``--backends`` names.
HTTP_KINDS = ("loopback", "hosted")
BACKENDS = ("in-process", "loopback", "hosted")
API_KEY = "bench-key"


# -- options -------------------------------------------------------------------------------
def _sizes(value: str) -> list[int]:
    try:
        sizes = [int(part.replace("_", "")) for part in value.split(",") if part.strip()]
    except ValueError:
        msg = f"not a comma-separated list of integers: {value!r}"
        raise argparse.ArgumentTypeError(msg) from None
    if not sizes or any(n < 1 for n in sizes):
        raise argparse.ArgumentTypeError("sizes must be positive message counts")
    if len(set(sizes)) != len(sizes):
        raise argparse.ArgumentTypeError("sizes must be distinct")
    return sizes


def _backends(value: str) -> list[str]:
    names = [part.strip() for part in value.split(",") if part.strip()]
    unknown = [n for n in names if n not in BACKENDS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown backends {unknown}; choose from {BACKENDS}")
    return ["in-process", *[n for n in names if n != "in-process"]]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"python -m benchmarks {NAME}",
        description="Retrieval cost of one chat turn (all five memory sources) on the "
        "local SQLite engine.",
    )
    size = parser.add_argument_group("workload (per size)")
    size.add_argument(
        "--sizes",
        type=_sizes,
        default=[10_000],
        help="comma-separated message counts, one database each, default: 10000",
    )
    size.add_argument("--users", type=positive, help="default: messages / 100")
    size.add_argument(
        "--conversations-per-user", type=positive, default=10, help="default: %(default)s"
    )
    size.add_argument("--entities", type=positive, help="default: messages / 10")
    size.add_argument(
        "--relationships-per-entity",
        type=non_negative,
        default=2,
        help="outgoing edges per entity, default: %(default)s",
    )
    size.add_argument(
        "--steps-per-conversation",
        type=non_negative,
        default=3,
        help="reasoning steps per conversation (2 in 3 are direct responses), default: %(default)s",
    )
    size.add_argument("--seed", type=int, default=42, help="default: %(default)s")

    measure = parser.add_argument_group("measurement (per size)")
    measure.add_argument(
        "--turns", type=positive, default=300, help="native turns, default: %(default)s"
    )
    measure.add_argument(
        "--per-conversation-turns",
        type=non_negative,
        default=100,
        help="turns with user_message_search hidden, default: %(default)s",
    )
    measure.add_argument(
        "--pre-embedded-turns",
        type=non_negative,
        default=100,
        help="native turns with the query embedded once up front (timed), default: %(default)s",
    )
    measure.add_argument(
        "--solo-turns",
        type=non_negative,
        default=100,
        help="turns whose sources run alone one after another, default: %(default)s",
    )
    measure.add_argument(
        "--http-turns",
        type=non_negative,
        default=300,
        help="turns per HTTP backend (loopback, hosted), default: %(default)s",
    )
    measure.add_argument(
        "--backends",
        type=_backends,
        default=list(BACKENDS),
        help="comma-separated, of in-process (always measured), loopback, hosted; "
        "default: all (hosted needs MEMORY_API_KEY, else it is skipped with a message)",
    )
    measure.add_argument(
        "--hosted-max-messages",
        type=positive,
        default=10_000,
        help="build the workload on hosted NAMS only for sizes up to this, default: %(default)s",
    )
    measure.add_argument(
        "--warmup", type=non_negative, default=20, help="unrecorded turns, default: %(default)s"
    )
    measure.add_argument(
        "--limit", type=positive, default=TURN_LIMIT, help="memories per turn, default: 6"
    )

    engine = parser.add_argument_group("engine")
    engine.add_argument(
        "--embedder",
        choices=("default", "hashing"),
        default="default",
        help="default: all-MiniLM-L6-v2 int8 ONNX; hashing: model-free, for quick runs",
    )
    engine.add_argument("--vector-index", choices=("auto", "sqlite-vec", "numpy"), default="auto")
    engine.add_argument(
        "--extraction",
        choices=("sync", "background", "off"),
        help="entity extraction while the turns write (the build never extracts); "
        "default: the engine's default, what a user gets",
    )
    engine.add_argument(
        "--db",
        type=Path,
        help="keep the database here and reuse it on the next run with the same settings "
        "(several sizes: PATH-<size>.suffix, or put {size} in PATH); default: a temp file",
    )

    add_report_options(parser)
    return parser


# -- what a size builds --------------------------------------------------------------------
@dataclass(frozen=True)
class SizeSpec:
    """Everything that decides the content of one size's database."""

    messages: int
    users: int
    conversations_per_user: int
    entities: int
    relationships_per_entity: int
    steps_per_conversation: int
    seed: int
    embedder: str
    dimension: int
    vector_index: str

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def workload(self) -> Workload:
        """The seeded workload this spec builds (the same for every backend)."""
        return generate(
            users=self.users,
            conversations_per_user=self.conversations_per_user,
            messages=self.messages,
            entities=self.entities,
            seed=self.seed,
        )


def _spec(args: argparse.Namespace, messages: int, embedder: BaseEmbedder) -> SizeSpec:
    return SizeSpec(
        messages=messages,
        users=args.users if args.users is not None else max(1, messages // 100),
        conversations_per_user=args.conversations_per_user,
        entities=args.entities if args.entities is not None else max(2, messages // 10),
        relationships_per_entity=args.relationships_per_entity,
        steps_per_conversation=args.steps_per_conversation,
        seed=args.seed,
        embedder=embedder.name,
        dimension=embedder.dimension,
        vector_index=args.vector_index,
    )


def _db_path(args: argparse.Namespace, messages: int) -> Path | None:
    if args.db is None:
        return None
    text = str(args.db)
    if "{size}" in text:
        return Path(text.replace("{size}", str(messages)))
    if len(args.sizes) == 1:
        return Path(args.db)
    db = Path(args.db)
    return db.with_name(f"{db.stem}-{messages}{db.suffix}")


def _sidecar(db: Path) -> Path:
    return Path(f"{db}.{NAME}.json")


def _check_reuse(db: Path, spec: SizeSpec) -> dict[str, Any] | None:
    """The sidecar of a reusable database, ``None`` when ``db`` is to be built.

    Raises ``ValueError`` (with the reason) for a database this run must not use.
    """
    sidecar = _sidecar(db)
    if not db.exists():
        return None
    if not sidecar.exists():
        raise ValueError(
            f"{db} exists but {sidecar} does not: not built (completely) by this benchmark; "
            "delete it or choose another --db"
        )
    try:
        marker = json.loads(sidecar.read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"{sidecar} is unreadable ({exc}); delete {db} and it") from exc
    if marker.get("benchmark") != NAME or marker.get("format") != MARKER_FORMAT:
        raise ValueError(
            f"{sidecar} is from another benchmark or format; delete {db} and {sidecar}"
        )
    recorded: dict[str, Any] = marker.get("spec", {})
    wanted = spec.to_json()
    if recorded != wanted:
        diff = ", ".join(
            f"{key}: built {recorded.get(key)!r}, asked {value!r}"
            for key, value in wanted.items()
            if recorded.get(key) != value
        )
        raise ValueError(f"{db} was built with other settings ({diff}); refusing to reuse it")
    return cast(dict[str, Any], marker)


def _load() -> list[float] | None:
    return list(os.getloadavg()) if hasattr(os, "getloadavg") else None


def _rate(count: int, seconds: float) -> dict[str, float]:
    return {"count": count, "seconds": seconds, "per_second": count / seconds if seconds else 0.0}


# -- build ---------------------------------------------------------------------------------
async def _build(
    backend: MemoryBackend, workload: Workload, spec: SizeSpec, quiet: bool
) -> tuple[list[list[str]], dict[str, Any]]:
    """Write the workload; ``([[conversation id, user id], ...], build timings)``."""
    timings: dict[str, Any] = {}

    progress = Progress("create_conversation", len(workload.conversations), enabled=not quiet)
    start = time.perf_counter()
    conversations: list[list[str]] = []
    for i, conv in enumerate(workload.conversations, 1):
        created = await backend.create_conversation(conv.user_id, {"topic": conv.topic})
        conversations.append([created.id, conv.user_id])
        progress.update(i)
    timings["conversations"] = _rate(len(conversations), time.perf_counter() - start)

    progress = Progress("add_messages", workload.message_count, enabled=not quiet)
    start = time.perf_counter()
    done = calls = 0
    for (conv_id, _), conv in zip(conversations, workload.conversations, strict=True):
        for chunk in chunks(conv.turns, MAX_BULK_MESSAGES):
            new = [NewMessage(role=t.role, content=t.content) for t in chunk]
            done += len(await backend.add_messages(conv_id, new))
            calls += 1
            progress.update(done)
    timings["messages"] = _rate(done, time.perf_counter() - start)
    timings["message_bulk_calls"] = calls

    progress = Progress("add_entity", len(workload.entities), enabled=not quiet)
    start = time.perf_counter()
    entity_ids: list[str] = []
    for i, entity in enumerate(workload.entities, 1):
        added = await backend.add_entity(entity.name, entity.type, entity.description)
        entity_ids.append(added.id)
        progress.update(i)
    timings["entities"] = _rate(len(entity_ids), time.perf_counter() - start)

    edges = relationships(
        random.Random(spec.seed + 11), workload.entities, spec.relationships_per_entity
    )
    if not backend.capabilities.relationship_writes:  # hosted NAMS may not offer them
        edges = ()
    progress = Progress("add_relationship", len(edges), enabled=not quiet)
    start = time.perf_counter()
    for i, edge in enumerate(edges, 1):
        await backend.add_relationship(entity_ids[edge.source], entity_ids[edge.target], edge.type)
        progress.update(i)
    timings["relationships"] = _rate(len(edges), time.perf_counter() - start)

    step_rng = random.Random(spec.seed + 10)
    total_steps = len(conversations) * spec.steps_per_conversation
    progress = Progress("record_step", total_steps, enabled=not quiet)
    start = time.perf_counter()
    recorded = 0
    for conv_id, _ in conversations:
        for step in reasoning_steps(step_rng, spec.steps_per_conversation):
            await backend.record_step(conv_id, step.reasoning, step.action_taken, step.result)
            recorded += 1
            progress.update(recorded)
    timings["steps"] = _rate(recorded, time.perf_counter() - start)
    return conversations, timings


# -- instruments ---------------------------------------------------------------------------
class TimedEmbedder:
    """Wraps the real embedder for the measured store: times every ``embed_query``.

    Same name and dimension, so the store sees the vectors it was built with; the model
    runs (query cache misses) are read from the wrapped embedder's cache statistics.
    """

    def __init__(self, inner: BaseEmbedder) -> None:
        self.inner = inner
        self._lock = threading.Lock()
        self.query_ms: list[float] = []

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> Matrix:
        return self.inner.embed(texts)

    def embed_query(self, text: str) -> Vector:
        start = time.perf_counter()
        vector = self.inner.embed_query(text)
        elapsed = (time.perf_counter() - start) * 1000.0
        with self._lock:
            self.query_ms.append(elapsed)
        return vector

    def model_runs(self) -> int:
        return self.inner.query_cache_info().misses

    def take(self) -> list[float]:
        with self._lock:
            out, self.query_ms = self.query_ms, []
        return out


@dataclass(frozen=True, slots=True)
class Call:
    """One backend call of a turn; times in ms from the start of the turn."""

    method: str
    source: str
    start_ms: float
    end_ms: float
    items: int
    failed: bool


def _items(result: object) -> int:
    """What a backend call handed back, counted: hits, relationships, steps, ..."""
    if isinstance(result, SearchResult):
        return len(result.items)
    if isinstance(result, EntityDetails):
        return len(result.relationships)
    if isinstance(result, list):
        if result and isinstance(result[0], ConversationSearchHits):
            groups = cast(list[ConversationSearchHits], result)
            return sum(len(g.messages) + len(g.steps) for g in groups)
        return len(result)
    return 0


class CountingBackend:
    """A backend proxy: forwards everything, counts and times every async call.

    ``capabilities`` may differ from the wrapped backend's (to hide ``user_message_search``).
    Calls are labelled with the memory source they serve, using the conversation of the
    current turn: a search or step list in it is ``conversation`` / ``reasoning``, in any
    other conversation ``cross-session``.
    """

    def __init__(self, inner: MemoryBackend, capabilities: Capabilities | None = None) -> None:
        self._inner = inner
        self._capabilities = capabilities if capabilities is not None else inner.capabilities
        self.conversation_id = ""
        self.origin = 0.0
        self.calls: list[Call] = []

    @property
    def capabilities(self) -> Capabilities:
        return self._capabilities

    def start_turn(self, conversation_id: str) -> None:
        self.conversation_id = conversation_id
        self.calls = []
        self.origin = time.perf_counter()

    def _source(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
        if method == "search_entities":
            return "long-term"
        if method == "get_entity":
            return "graph"
        if method in ("search_messages", "list_steps"):
            conv = args[0] if args else kwargs.get("conversation_id")
            if conv == self.conversation_id:
                return "conversation" if method == "search_messages" else "reasoning"
            return "cross-session"
        if method in ("search_user_messages", "list_conversations"):
            return "cross-session"
        if method == "add_message":
            return "persist"
        return "other"

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not inspect.iscoroutinefunction(attr):
            return attr
        method: Callable[..., Awaitable[Any]] = attr

        async def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            result: Any = None
            failed = True
            try:
                result = await method(*args, **kwargs)
                failed = False
                return result
            finally:
                end = time.perf_counter()
                self.calls.append(
                    Call(
                        method=name,
                        source=self._source(name, args, kwargs),
                        start_ms=(start - self.origin) * 1000.0,
                        end_ms=(end - self.origin) * 1000.0,
                        items=_items(result),
                        failed=failed,
                    )
                )

        return timed


class CountingLogger:
    """A ``MemoryLogger`` that keeps what retrieval reports (it should report nothing)."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def warn(self, message: str, error: BaseException | None = None) -> None:
        self.messages.append(f"{message}: {error}" if error is not None else message)

    def error(self, message: str, error: BaseException | None = None) -> None:
        self.warn(message, error)


# -- measurement ---------------------------------------------------------------------------
@dataclass
class TurnSample:
    ms: float  # the whole turn: retrieval, then both writes
    retrieve_ms: float
    persist_ms: float
    http_requests: int | None
    calls: list[Call]
    hits: Counter[str]
    embed_calls: int
    embed_ms: float
    model_runs: int
    warnings: int


@dataclass
class Series:
    kind: str
    samples: list[TurnSample] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        samples = self.samples
        n = len(samples)
        ms = [s.ms for s in samples]

        def mean(values: Sequence[float]) -> float:
            return sum(values) / n if n else 0.0

        methods: Counter[str] = Counter()
        for s in samples:
            methods.update(c.method for c in s.calls)
        by_source: dict[str, Any] = {}
        for source in SOURCES:
            done_at = [
                max(c.end_ms for c in s.calls if c.source == source)
                for s in samples
                if any(c.source == source for c in s.calls)
            ]
            by_source[source] = {
                "calls_per_turn": mean([sum(c.source == source for c in s.calls) for s in samples]),
                "call_ms_per_turn": mean(
                    [
                        sum(c.end_ms - c.start_ms for c in s.calls if c.source == source)
                        for s in samples
                    ]
                ),
                "done_at_p50_ms": percentile(done_at, 50),
                "done_at_p95_ms": percentile(done_at, 95),
                "items_per_turn": mean(
                    [sum(c.items for c in s.calls if c.source == source) for s in samples]
                ),
                "hits_per_turn": mean([s.hits[source] for s in samples]),
                "turns_with_hits": sum(1 for s in samples if s.hits[source]) / n if n else 0.0,
            }
        retrieve = [s.retrieve_ms for s in samples]
        persist = [s.persist_ms for s in samples]
        http = [s.http_requests for s in samples if s.http_requests is not None]
        return {
            "label": SERIES_LABELS[self.kind],
            "n": n,
            "p50_ms": percentile(ms, 50),
            "p95_ms": percentile(ms, 95),
            "p99_ms": percentile(ms, 99),
            "retrieve_p50_ms": percentile(retrieve, 50),
            "retrieve_p95_ms": percentile(retrieve, 95),
            "retrieve_p99_ms": percentile(retrieve, 99),
            "persist_p50_ms": percentile(persist, 50),
            "persist_p95_ms": percentile(persist, 95),
            "http_requests_per_turn": sum(http) / len(http) if http else None,
            "mean_ms": mean(ms),
            "max_ms": max(ms, default=0.0),
            "stdev_ms": statistics.stdev(ms) if n > 1 else 0.0,
            "calls_per_turn": mean([len(s.calls) for s in samples]),
            "calls_per_turn_by_method": {k: v / n for k, v in methods.items()} if n else {},
            "failed_calls": sum(c.failed for s in samples for c in s.calls),
            "by_source": by_source,
            "hits_per_turn": mean([sum(s.hits.values()) for s in samples]),
            "empty_turns": sum(1 for s in samples if not s.hits),
            "embed_query_calls_per_turn": mean([s.embed_calls for s in samples]),
            "embed_query_ms_per_turn": mean([s.embed_ms for s in samples]),
            "model_runs_per_turn": mean([s.model_runs for s in samples]),
            "warnings": sum(s.warnings for s in samples),
        }


SOLO_STEPS = (
    "embed_query",
    "long-term",
    "graph",
    "conversation",
    "cross-session",
    "cross-session per-conversation",
    "reasoning",
)
SOLO_LABELS = {
    "embed_query": "embed_query of the fresh query (model)",
    "long-term": "long-term: search_entities",
    "graph": f"graph: {DEFAULT_GRAPH_EXPANSION_LIMIT} x get_entity",
    "conversation": "conversation: search_messages",
    "cross-session": "cross-session: search_user_messages",
    "cross-session per-conversation": (
        f"cross-session: 1 + 2 x {DEFAULT_CROSS_SESSION_LIMIT} calls (hidden)"
    ),
    "reasoning": "reasoning: list_steps",
}


class Measurer:
    """Runs turns of every kind against one opened store."""

    def __init__(
        self, backend: SQLiteBackend, embedder: TimedEmbedder, limit: int, logger: CountingLogger
    ) -> None:
        self.backend = backend
        self.embedder = embedder
        self.limit = limit
        self.logger = logger
        self.native = CountingBackend(backend)
        hidden = dataclasses.replace(backend.capabilities, user_message_search=False)
        self.per_conversation = CountingBackend(backend, hidden)
        self.options = RetrievalOptions(logger=logger)
        self.http: dict[str, tuple[CountingBackend, CountingTransport]] = {}

    def add_http(self, kind: str, client: MemoryBackend, transport: CountingTransport) -> None:
        """Measure ``kind`` turns through ``client`` (a ``HostedBackend``) too."""
        self.http[kind] = (CountingBackend(client), transport)

    async def turn(self, kind: TurnKind, user_id: str, conv_id: str, query: str) -> TurnSample:
        """``retrieve_memories`` then ``persist_step`` (user and assistant message), timed."""
        transport: CountingTransport | None = None
        if kind in self.http:
            proxy, transport = self.http[kind]
        else:
            proxy = self.per_conversation if kind == "per-conversation" else self.native
        self.embedder.take()
        runs_before = self.embedder.model_runs()
        warnings_before = len(self.logger.messages)
        requests_before = transport.requests if transport is not None else 0
        proxy.start_turn(conv_id)
        start = time.perf_counter()
        if kind == "pre-embedded":  # on a worker thread, as the backend itself would
            await asyncio.to_thread(self.embedder.embed_query, query)
        hits = await retrieve_memories(
            cast(MemoryBackend, proxy),
            Scope(user_id=user_id, conversation_id=conv_id),
            conv_id,
            query,
            limit=self.limit,
            options=self.options,
        )
        retrieved = time.perf_counter()
        await persist_step(
            cast(MemoryBackend, proxy),
            conv_id,
            user_text=query,
            assistant_text=f"Here is what I remember about that: {query}.",
            logger=self.logger,
        )
        end = time.perf_counter()
        embeds = self.embedder.take()
        return TurnSample(
            ms=(end - start) * 1000.0,
            retrieve_ms=(retrieved - start) * 1000.0,
            persist_ms=(end - retrieved) * 1000.0,
            http_requests=None if transport is None else transport.requests - requests_before,
            calls=list(proxy.calls),
            hits=Counter(h.source for h in hits),
            embed_calls=len(embeds),
            embed_ms=sum(embeds),
            model_runs=self.embedder.model_runs() - runs_before,
            warnings=len(self.logger.messages) - warnings_before,
        )

    async def solo(self, user_id: str, conv_id: str, query: str) -> dict[str, float]:
        """Each source's calls alone and in sequence (query vector cached first), in ms."""
        b = self.backend
        out: dict[str, float] = {}

        start = time.perf_counter()
        self.embedder.embed_query(query)  # the bare model call; caches the vector
        out["embed_query"] = (time.perf_counter() - start) * 1000.0

        start = time.perf_counter()
        found = await b.search_entities(query, limit=MAX_LONGTERM)
        out["long-term"] = (time.perf_counter() - start) * 1000.0

        roots = [e.id for e in found.items if e.id][:DEFAULT_GRAPH_EXPANSION_LIMIT]
        start = time.perf_counter()
        for root in roots:
            await b.get_entity(root)
        out["graph"] = (time.perf_counter() - start) * 1000.0

        start = time.perf_counter()
        await b.search_messages(conv_id, query, limit=self.limit)
        out["conversation"] = (time.perf_counter() - start) * 1000.0

        start = time.perf_counter()
        await b.search_user_messages(
            user_id,
            query,
            conversation_limit=DEFAULT_CROSS_SESSION_LIMIT,
            per_conversation_limit=CROSS_SEARCH_LIMIT,
            exclude_conversation_id=conv_id,
        )
        out["cross-session"] = (time.perf_counter() - start) * 1000.0

        start = time.perf_counter()
        convs = await b.list_conversations(user_id=user_id, limit=DEFAULT_CROSS_SESSION_LIMIT + 1)
        for other in [c.id for c in convs if c.id != conv_id][:DEFAULT_CROSS_SESSION_LIMIT]:
            await b.search_messages(other, query, limit=CROSS_SEARCH_LIMIT)
            await b.list_steps(other)
        out["cross-session per-conversation"] = (time.perf_counter() - start) * 1000.0

        start = time.perf_counter()
        await b.list_steps(conv_id)
        out["reasoning"] = (time.perf_counter() - start) * 1000.0
        self.embedder.take()
        return out


def _solo_summary(rows: list[dict[str, float]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for step in SOLO_STEPS:
        ms = [r[step] for r in rows]
        out[step] = {
            "label": SOLO_LABELS[step],
            "n": len(ms),
            "p50_ms": percentile(ms, 50),
            "p95_ms": percentile(ms, 95),
            "mean_ms": sum(ms) / len(ms) if ms else 0.0,
        }
    return out


def _schedule(
    args: argparse.Namespace, rng: random.Random, http_kinds: Sequence[TurnKind]
) -> list[TurnKind]:
    kinds: list[TurnKind] = []
    kinds += ["native"] * args.turns
    kinds += ["per-conversation"] * args.per_conversation_turns
    kinds += ["pre-embedded"] * args.pre_embedded_turns
    kinds += ["solo"] * args.solo_turns
    for kind in http_kinds:
        kinds += [kind] * args.http_turns
    rng.shuffle(kinds)
    return kinds


@dataclass
class HttpTarget:
    """A ``HostedBackend`` to measure, its request counter and its stored conversations."""

    client: MemoryBackend
    transport: CountingTransport
    conversations: list[list[str]]


async def _measure(
    args: argparse.Namespace,
    backend: SQLiteBackend,
    embedder: TimedEmbedder,
    conversations: list[list[str]],
    query_rng: random.Random,
    seen: set[str],
    http: dict[TurnKind, HttpTarget],
) -> dict[str, Any]:
    logger = CountingLogger()
    measurer = Measurer(backend, embedder, args.limit, logger)
    for kind, target in http.items():
        measurer.add_http(kind, target.client, target.transport)
    rng = random.Random(args.seed + 2)
    warm_kinds: tuple[TurnKind, ...] = (
        "native",
        "per-conversation",
        "pre-embedded",
        "solo",
        *http,
    )
    schedule = _schedule(args, rng, list(http))
    queries = distinct_queries(query_rng, args.warmup + len(schedule), seen)

    series = {kind: Series(kind) for kind in SERIES_LABELS}
    solo_rows: list[dict[str, float]] = []
    cache_before = embedder.inner.query_cache_info()
    for i, query in enumerate(queries):
        warm = i < args.warmup
        kind = warm_kinds[i % len(warm_kinds)] if warm else schedule[i - args.warmup]
        pool = http[kind].conversations if kind in http else conversations
        conv_id, user_id = rng.choice(pool)
        if kind == "solo":
            row = await measurer.solo(user_id, conv_id, query)
            if not warm:
                solo_rows.append(row)
            continue
        sample = await measurer.turn(kind, user_id, conv_id, query)
        if not warm:
            series[kind].samples.append(sample)
    cache_after = embedder.inner.query_cache_info()
    return {
        "series": {kind: s.summary() for kind, s in series.items() if s.samples},
        "solo": _solo_summary(solo_rows) if solo_rows else {},
        "query_cache": {
            "hits": cache_after.hits - cache_before.hits,
            "misses": cache_after.misses - cache_before.misses,
            "distinct_queries": len(queries),
        },
        "warning_examples": logger.messages[:5],
    }


# -- HTTP backends -------------------------------------------------------------------------
def _hosted_skip_reason(args: argparse.Namespace, spec: SizeSpec) -> str | None:
    if not os.environ.get(API_KEY_ENV, "").strip():
        return (
            f"{API_KEY_ENV} is not set, so hosted NAMS is not measured (set it, and "
            f"{ENDPOINT_ENV} for another server, to include it)"
        )
    if spec.messages > args.hosted_max_messages:
        return (
            f"{spec.messages} messages is above --hosted-max-messages "
            f"{args.hosted_max_messages}: building that on hosted NAMS takes too long"
        )
    return None


async def _http_targets(
    args: argparse.Namespace,
    spec: SizeSpec,
    backend: SQLiteBackend,
    conversations: list[list[str]],
    stack: contextlib.AsyncExitStack,
    skipped: dict[str, str],
    tag: str,
) -> dict[TurnKind, HttpTarget]:
    """Start what ``--backends`` asks for; the stack stops it (clients before the server)."""
    targets: dict[TurnKind, HttpTarget] = {}
    if "loopback" in args.backends:
        from nams_local.server import create_app

        app = create_app(backend, api_keys={API_KEY: backend.workspace})
        server = stack.enter_context(LoopbackServer(app))
        transport = CountingTransport(httpx.AsyncHTTPTransport())
        client = HostedBackend(API_KEY, endpoint=server.endpoint, transport=transport)
        stack.push_async_callback(client.aclose)
        await client.probe_capabilities()
        targets["loopback"] = HttpTarget(client, transport, conversations)
    if "hosted" in args.backends:
        reason = _hosted_skip_reason(args, spec)
        if reason is not None:
            skipped["hosted"] = reason
            say(args, f"{tag} hosted skipped: {reason}")
            return targets
        transport = CountingTransport(httpx.AsyncHTTPTransport())
        hosted: HostedBackend = open_hosted_backend(transport=transport)
        stack.push_async_callback(hosted.aclose)
        await hosted.probe_capabilities()
        workload = spec.workload()
        say(args, f"{tag} building the same workload on hosted NAMS ({hosted.endpoint})")
        hosted_convs, _ = await _build(hosted, workload, spec, args.quiet)
        targets["hosted"] = HttpTarget(hosted, transport, hosted_convs)
    return targets


# -- one size ------------------------------------------------------------------------------
async def _run_size(
    args: argparse.Namespace,
    spec: SizeSpec,
    db: Path,
    marker: dict[str, Any] | None,
    embedder: BaseEmbedder,
    query_rng: random.Random,
    seen: set[str],
) -> dict[str, Any]:
    tag = f"[{NAME} {spec.messages}]"
    result: dict[str, Any] = {"spec": spec.to_json(), "database": {"path": str(db)}}
    if marker is None:
        say(args, f"{tag} generating workload (seed {spec.seed})")
        workload = spec.workload()
        say(args, f"{tag} building {db}")
        _sidecar(db).unlink(missing_ok=True)
        # Built without extraction, so the store holds exactly the seeded workload.
        builder = SQLiteBackend(
            db, embedder=embedder, vector_index=args.vector_index, extraction="off"
        )
        try:
            start = time.perf_counter()
            conversations, timings = await _build(builder, workload, spec, args.quiet)
            timings["total_seconds"] = time.perf_counter() - start
            counts = (await asyncio.to_thread(builder.info))["counts"]
        finally:
            await builder.aclose()
        marker = {
            "benchmark": NAME,
            "format": MARKER_FORMAT,
            "spec": spec.to_json(),
            "built_at": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "build": timings,
            "counts": counts,
            "conversations": conversations,
        }
        partial = _sidecar(db).with_suffix(".partial")
        partial.write_text(json.dumps(marker) + "\n")
        partial.replace(_sidecar(db))  # the sidecar appears only once the build is complete
        result["database"]["reused"] = False
    else:
        say(args, f"{tag} reusing {db} (built {marker['built_at']})")
        result["database"]["reused"] = True
    result["database"]["built_at"] = marker["built_at"]
    result["build"] = marker["build"]

    timed = TimedEmbedder(embedder)
    extraction: dict[str, Any] = {} if args.extraction is None else {"extraction": args.extraction}
    backend = SQLiteBackend(db, embedder=timed, vector_index=args.vector_index, **extraction)
    skipped: dict[str, str] = {}
    try:
        info = await asyncio.to_thread(backend.info)
        if info["counts"] != marker["counts"]:
            raise ValueError(
                f"{db} holds {info['counts']}, but {_sidecar(db)} recorded {marker['counts']}: "
                "it changed since it was built; delete both and build again"
            )
        async with contextlib.AsyncExitStack() as stack:
            http = await _http_targets(
                args, spec, backend, marker["conversations"], stack, skipped, tag
            )
            n_turns = (
                args.warmup
                + args.turns
                + args.per_conversation_turns
                + args.pre_embedded_turns
                + args.solo_turns
                + args.http_turns * len(http)
            )
            say(args, f"{tag} measuring {n_turns} turns ({args.warmup} warm-up)")
            result["load_average_before_measuring"] = _load()
            measured = await _measure(
                args, backend, timed, marker["conversations"], query_rng, seen, http
            )
        # The turns' own writes are part of the store now; the sidecar follows, so the
        # next run can still tell this benchmark's growth from a foreign change.
        marker["counts"] = (await asyncio.to_thread(backend.info))["counts"]
        _sidecar(db).write_text(json.dumps(marker) + "\n")
    finally:
        await backend.aclose()
    result["skipped_backends"] = skipped
    result["load_average_after_measuring"] = _load()
    result["database"]["bytes"] = _file_size(db)
    result["info"] = info
    result.update(measured)
    return result


async def _run(
    args: argparse.Namespace,
    plans: list[tuple[SizeSpec, Path, dict[str, Any] | None]],
    embedder: BaseEmbedder,
) -> dict[str, Any]:
    say(args, f"[{NAME}] loading embedder {embedder.name}")
    start = time.perf_counter()
    embedder.embed(["warm-up: load the model before anything is timed"])
    load_seconds = time.perf_counter() - start
    query_rng = random.Random(args.seed + 1)
    seen: set[str] = set()  # one set for all sizes: the embedder (and its cache) is shared
    sizes = []
    for spec, db, marker in plans:
        sizes.append(await _run_size(args, spec, db, marker, embedder, query_rng, seen))
    return {"embedder_load_seconds": load_seconds, "sizes": sizes}


# -- report --------------------------------------------------------------------------------
TARGET_P50_MS = 15.0
TARGET_P95_MS = 40.0
TARGET_MESSAGES = 100_000
TARGET_LOOPBACK_RATIO = 3.0


def _verdict(p50: float, p95: float) -> str:
    ok50 = "met" if p50 <= TARGET_P50_MS else "MISSED"
    ok95 = "met" if p95 <= TARGET_P95_MS else "MISSED"
    return f"p50 {p50:.1f} ms ({ok50}), p95 {p95:.1f} ms ({ok95})"


def _loads(load: list[float] | None) -> str:
    return " ".join(f"{x:.2f}" for x in load) if load else "unknown"


def _render_size(size: dict[str, Any], settings: dict[str, Any]) -> list[str]:
    spec, db, info, build = size["spec"], size["database"], size["info"], size["build"]
    counts = info["counts"]
    per_conv = spec["messages"] / max(counts["conversations"], 1)
    state = "reused" if db["reused"] else "built in this run"
    lines = [
        "",
        f"=== {spec['messages']} messages: {spec['users']} users x "
        f"{spec['conversations_per_user']} conversations ({per_conv:.0f} messages each), "
        f"{counts['entities']} entities, {counts['relationships']} relationships, "
        f"{counts['reasoning_steps']} reasoning steps",
        f"  database   {db['path']}, {_mb(db['bytes'])}, {state} "
        f"(built {db['built_at']} in {build['total_seconds']:.0f} s)",
        f"  load avg   {_loads(size['load_average_before_measuring'])} before measuring, "
        f"{_loads(size['load_average_after_measuring'])} after (1, 5, 15 min)",
        "",
        "Build (wall clock)                           count   seconds       rate",
    ]
    for key, label, unit in (
        ("conversations", "create_conversation", "conv/s"),
        ("messages", f"add_messages ({build['message_bulk_calls']} bulk calls)", "msg/s"),
        ("entities", "add_entity (one per call)", "ent/s"),
        ("relationships", "add_relationship (one per call)", "rel/s"),
        ("steps", "record_step (one per call)", "step/s"),
    ):
        r = build[key]
        lines.append(
            f"  {label:<40} {r['count']:>7} {r['seconds']:>9.2f} {r['per_second']:>10.1f} {unit}"
        )

    series: dict[str, Any] = size["series"]
    lines += _render_backends(size)
    lines += [
        "",
        f"Retrieval latency, ms: retrieve_memories(limit={settings['limit']}) alone, wall clock",
        f"  {'series':<47} {'n':>4} {'p50':>6} {'p95':>6} {'p99':>6} {'mean':>6} {'max':>6}"
        f" {'calls':>6} {'embeds':>6} {'model':>6} {'hits':>5}",
    ]
    for s in series.values():
        lines.append(
            f"  {s['label']:<47} {s['n']:>4} {s['retrieve_p50_ms']:>6.2f} "
            f"{s['retrieve_p95_ms']:>6.2f} {s['retrieve_p99_ms']:>6.2f} {s['mean_ms']:>6.2f} "
            f"{s['max_ms']:>6.2f} "
            f"{s['calls_per_turn']:>6.2f} {s['embed_query_calls_per_turn']:>6.2f} "
            f"{s['model_runs_per_turn']:>6.2f} {s['hits_per_turn']:>5.2f}"
        )
    lines.append(
        "  mean/max: whole turn; calls: backend calls per turn (with the 2 writes); embeds: "
        "embed_query calls; model: of those, query cache misses (model runs)"
    )

    keys = list(series)
    methods: list[str] = list(METHOD_ORDER)
    for s in series.values():
        methods += [m for m in s["calls_per_turn_by_method"] if m not in methods]
    header = "".join(f" {k:>17}" for k in keys)
    lines += ["", f"Backend calls per turn (mean)       {header}"]
    for m in methods:
        cells = "".join(
            f" {series[k]['calls_per_turn_by_method'].get(m, 0.0):>17.2f}"
            if m in series[k]["calls_per_turn_by_method"]
            else f" {'-':>17}"
            for k in keys
        )
        lines.append(f"  {m:<34}{cells}")
    lines.append(
        f"  {'total':<34}" + "".join(f" {series[k]['calls_per_turn']:>17.2f}" for k in keys)
    )
    failed = sum(series[k]["failed_calls"] for k in keys)
    warnings = sum(series[k]["warnings"] for k in keys)
    empty = ", ".join(f"{k} {series[k]['empty_turns']}" for k in keys)
    lines.append(
        f"  failed calls {failed}, retrieval warnings {warnings}, turns with no hit: {empty}"
    )

    for k in keys:
        s = series[k]
        lines += [
            "",
            f"Per source, {k} turns (calls overlap; ms are wall time of each backend call,",
            "including the wait for the store's threads (and the CPU) and the query embedding)",
            f"  {'source':<15} {'calls':>6} {'call ms':>8} {'done@p50':>9} {'done@p95':>9} "
            f"{'items':>6} {'hits':>5} {'turns w/ hits':>14}",
        ]
        for source, row in s["by_source"].items():
            lines.append(
                f"  {source:<15} {row['calls_per_turn']:>6.2f} {row['call_ms_per_turn']:>8.2f} "
                f"{row['done_at_p50_ms']:>9.2f} {row['done_at_p95_ms']:>9.2f} "
                f"{row['items_per_turn']:>6.1f} {row['hits_per_turn']:>5.2f} "
                f"{row['turns_with_hits']:>14.0%}"
            )
        lines.append(
            "  done@: ms from turn start until the source's last call returned; items: what "
            "the backend returned (pre-merge); hits: what made the final list"
        )

    solo: dict[str, Any] = size["solo"]
    if solo:
        first = next(iter(solo.values()))
        lines += [
            "",
            f"Each source alone, ms ({first['n']} turns; calls one after another, query vector "
            "cached except for the first row)",
            f"  {'step':<47} {'p50':>7} {'p95':>7} {'mean':>7}",
        ]
        for row in solo.values():
            lines.append(
                f"  {row['label']:<47} {row['p50_ms']:>7.2f} {row['p95_ms']:>7.2f} "
                f"{row['mean_ms']:>7.2f}"
            )
    cache = size["query_cache"]
    lines += [
        "",
        f"  {cache['distinct_queries']} distinct query strings (never repeated across turns or "
        f"sizes); query cache while measuring: {cache['hits']} hits (reuse within a turn), "
        f"{cache['misses']} misses",
    ]
    for example in size["warning_examples"]:
        lines.append(f"  warning: {example}")
    return lines


def _render_backends(size: dict[str, Any]) -> list[str]:
    """The headline: whole turns per backend, and each backend's ratio to in-process."""
    series: dict[str, Any] = size["series"]
    spec = size["spec"]
    base = series.get("native")
    lines = [
        "",
        "One chat turn = retrieve_memories + persist_step (user and assistant message), ms",
        f"  {'backend':<44} {'n':>4} {'p50':>7} {'p95':>7} {'p99':>7} {'retr.p50':>8} "
        f"{'write p50':>9} {'calls':>5} {'HTTP':>5} {'x p50/p95/p99':>16}",
    ]
    for kind in ("native", *HTTP_KINDS):
        s = series.get(kind)
        if s is None:
            continue
        ratio = "1.00/1.00/1.00"
        if base is not None and kind != "native":
            ratio = "/".join(
                f"{s[f] / base[f]:.2f}" if base[f] else "-" for f in ("p50_ms", "p95_ms", "p99_ms")
            )
        http = f"{s['http_requests_per_turn']:.1f}" if s["http_requests_per_turn"] else "-"
        lines.append(
            f"  {s['label']:<44} {s['n']:>4} {s['p50_ms']:>7.2f} {s['p95_ms']:>7.2f} "
            f"{s['p99_ms']:>7.2f} {s['retrieve_p50_ms']:>8.2f} {s['persist_p50_ms']:>9.2f} "
            f"{s['calls_per_turn']:>5.1f} {http:>5} {ratio:>16}"
        )
    for kind, reason in size.get("skipped_backends", {}).items():
        lines.append(f"  {SERIES_LABELS[kind]:<44} skipped: {reason}")
    lines.append(
        "  calls: backend calls per turn (5 sources + graph expansion + 2 writes); HTTP: "
        "requests on the wire; x: ratio to in-process, same run"
    )
    if base is not None:
        at = "" if spec["messages"] == TARGET_MESSAGES else " (not the target size)"
        whole = _verdict(base["p50_ms"], base["p95_ms"])
        alone = _verdict(base["retrieve_p50_ms"], base["retrieve_p95_ms"])
        lines.append(
            f"  target at {TARGET_MESSAGES} messages: in-process p50 <= {TARGET_P50_MS:.0f} ms, "
            f"p95 <= {TARGET_P95_MS:.0f} ms{at}: whole turn {whole}; retrieval alone {alone}"
        )
        loop = series.get("loopback")
        if loop is not None and base["p50_ms"]:
            r50 = loop["p50_ms"] / base["p50_ms"]
            r95 = loop["p95_ms"] / base["p95_ms"] if base["p95_ms"] else 0.0
            ok = "met" if max(r50, r95) <= TARGET_LOOPBACK_RATIO else "MISSED"
            lines.append(
                f"  target: loopback HTTP <= {TARGET_LOOPBACK_RATIO:.0f}x in-process: "
                f"p50 {r50:.2f}x, p95 {r95:.2f}x ({ok})"
            )
    return lines


def render(results: dict[str, Any]) -> str:
    machine, settings = results["machine"], results["settings"]
    load = machine["load_average_at_start"]
    load_text = f", load avg at start {' '.join(f'{x:.2f}' for x in load)}" if load else ""
    info = results["sizes"][0]["info"] if results["sizes"] else None
    lines = [
        f"nams-local benchmark: {NAME}  ({results['finished_at']})",
        f"  machine    {machine['cpu_count']} cores (os.cpu_count), {machine['platform']}"
        f"{load_text}",
        f"  python     {machine['python']}, code at git {machine['git_revision'] or 'unknown'}",
    ]
    if info is not None:
        lines += [
            f"  sqlite     {info['sqlite_version']} via {info['driver']}, fts5={info['fts5']}, "
            f"sqlite-vec {info['sqlite_vec']}",
            f"  vectors    index {info['vector_index']}, embedder {info['embedder']} "
            f"({info['dimension']} dims), loaded in {results['embedder_load_seconds']:.2f} s",
        ]
    lines += [
        f"  measured   one chat turn = retrieve_memories(backend, scope, conversation, query, "
        f"limit={settings['limit']}) with all five sources",
        "             (long-term entities, graph expansion, current conversation, cross-session, "
        "reasoning), then persist_step",
        "             (the user and the assistant message), against a random user's random "
        "conversation, a distinct query per turn;",
        f"             after {settings['warmup']} warm-up turns, {settings['turns']} in-process + "
        f"{settings['per_conversation_turns']} per-conversation + "
        f"{settings['pre_embedded_turns']} pre-embedded + {settings['solo_turns']} solo",
        f"             + {settings['http_turns']} per HTTP backend turns, interleaved in a "
        "seeded random order;",
        f"             entity extraction while writing: {settings['extraction']} "
        "(the stores are built without it)",
    ]
    for size in results["sizes"]:
        lines += _render_size(size, settings)
    return "\n".join(lines)


# -- entry point ---------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    machine = _machine()
    embedder: BaseEmbedder = HashingEmbedder() if args.embedder == "hashing" else default_embedder()
    with tempfile.TemporaryDirectory(prefix="nams-bench-turn-") as tmp:
        plans: list[tuple[SizeSpec, Path, dict[str, Any] | None]] = []
        for messages in args.sizes:  # check every database before the first long build
            spec = _spec(args, messages, embedder)
            db = _db_path(args, messages) or Path(tmp) / f"turn-{messages}.sqlite3"
            try:
                marker = _check_reuse(db, spec)
            except ValueError as exc:
                parser.error(str(exc))
            plans.append((spec, db, marker))
        try:
            results = asyncio.run(_run(args, plans, embedder))
        except ValueError as exc:
            print(f"[{NAME}] error: {exc}", file=sys.stderr)
            return 2
    results["machine"] = machine
    results["benchmark"] = NAME
    results["argv"] = list(sys.argv[1:] if argv is None else argv)
    results["finished_at"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    results["settings"] = {
        "limit": args.limit,
        "turns": args.turns,
        "per_conversation_turns": args.per_conversation_turns,
        "pre_embedded_turns": args.pre_embedded_turns,
        "solo_turns": args.solo_turns,
        "warmup": args.warmup,
        "seed": args.seed,
        "embedder": args.embedder,
        "cpu_count": os.cpu_count(),
        "http_turns": args.http_turns,
        "extraction": args.extraction or "engine default",
        "backends": args.backends,
    }
    publish(
        args,
        NAME,
        results,
        render(results),
        argv=argv,
        panels=_panels(results),
    )
    return 0


def _panels(results: dict[str, Any]) -> list[BarGroup]:
    """Per size: whole-turn p50/p95/p99 of each backend."""
    panels = []
    for size in results["sizes"]:
        series = size["series"]
        kinds = [k for k in ("native", *HTTP_KINDS) if k in series]
        labels = ["in-process" if k == "native" else k for k in kinds]
        values = {pct: [series[k][f"{pct}_ms"] for k in kinds] for pct in ("p50", "p95", "p99")}
        at_target = size["spec"]["messages"] == TARGET_MESSAGES
        panels.append(
            BarGroup(
                f"one turn at {size['spec']['messages']:,} messages",
                "ms",
                labels,
                values,
                TARGET_P95_MS if at_target else None,
            )
        )
    return panels


if __name__ == "__main__":
    raise SystemExit(main())
