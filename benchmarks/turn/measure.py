"""The timing loop: turns of every kind against one opened store, interleaved.

Every turn asks a distinct query (so the embedder's query cache only helps within a turn)
of a random user's random conversation; the kinds run in one seeded random order, so
machine noise spreads over all of them and the ratios compare like with like.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import random
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any, cast

from backends.sqlite import SQLiteBackend
from nams_local.backend import MemoryBackend
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

from .._http import CountingTransport
from .._workload import distinct_queries
from .http_backends import HttpTarget, Settle
from .instruments import CountingBackend, CountingLogger, TimedEmbedder
from .kinds import SERIES_LABELS, TURN_METHODS, TurnKind
from .series import Series, TurnSample, solo_summary

__all__ = ["Measurer", "measure"]


class Measurer:
    """Runs turns of every kind against one opened store."""

    def __init__(
        self,
        backend: SQLiteBackend,
        embedder: TimedEmbedder,
        limit: int,
        logger: CountingLogger,
        back_to_back: bool = False,
    ) -> None:
        self.backend = backend
        self.embedder = embedder
        self.limit = limit
        self.logger = logger
        self.back_to_back = back_to_back
        self.native = CountingBackend(backend)
        self.per_source = CountingBackend(backend, hidden=TURN_METHODS)
        no_user_search = dataclasses.replace(backend.capabilities, user_message_search=False)
        self.per_conversation = CountingBackend(backend, no_user_search, hidden=TURN_METHODS)
        self.options = RetrievalOptions(logger=logger)
        self.http: dict[str, tuple[CountingBackend, CountingTransport]] = {}
        self.settles: dict[str, Settle] = {}

    def add_http(
        self,
        kind: str,
        client: MemoryBackend,
        transport: CountingTransport,
        settle: Settle | None = None,
    ) -> None:
        """Measure ``kind`` turns through ``client`` (a ``HostedBackend``) too; ``settle``
        waits for a turn's background work on its server."""
        self.http[kind] = (CountingBackend(client), transport)
        if settle is not None:
            self.settles[kind] = settle

    async def turn(self, kind: TurnKind, user_id: str, conv_id: str, query: str) -> TurnSample:
        """``retrieve_memories`` then ``persist_step`` (user and assistant message), timed."""
        transport: CountingTransport | None = None
        if kind in self.http:
            proxy, transport = self.http[kind]
        else:
            proxy = {"per-conversation": self.per_conversation, "per-source": self.per_source}.get(
                kind, self.native
            )
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
        settle_ms = 0.0 if self.back_to_back else await self.settle(conv_id, kind)
        return TurnSample(
            ms=(end - start) * 1000.0,
            retrieve_ms=(retrieved - start) * 1000.0,
            persist_ms=(end - retrieved) * 1000.0,
            settle_ms=settle_ms,
            http_requests=None if transport is None else transport.requests - requests_before,
            calls=list(proxy.calls),
            hits=Counter(h.source for h in hits),
            embed_calls=len(embeds),
            embed_ms=sum(embeds),
            model_runs=self.embedder.model_runs() - runs_before,
            warnings=len(self.logger.messages) - warnings_before,
        )

    async def settle(self, conv_id: str, kind: TurnKind = "native") -> float:
        """Wait for the turn's background work — its extraction and its messages' vectors —
        as the model call between two chat turns does; the ms it took (untimed in the turn).
        Without this, the next turn's retrieval waits for it (sync extraction mode, and
        read-your-writes on vectors) and the figure measures the previous turn's writes.
        A loopback turn's work is its server's (``http_backends``), waited for there."""
        start = time.perf_counter()
        settle = self.settles.get(kind)
        if settle is not None:
            await settle(conv_id)
        else:
            await self.backend.wait_for_extraction(conv_id)
            lane = self.backend.store.vector_lane
            if lane is not None:
                await lane.drained()
        return (time.perf_counter() - start) * 1000.0

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


def _schedule(
    args: argparse.Namespace, rng: random.Random, http_kinds: Sequence[TurnKind]
) -> list[TurnKind]:
    """Every measured turn's kind, as many as the options ask, in one seeded random order."""
    kinds: list[TurnKind] = []
    kinds += ["native"] * args.turns
    kinds += ["per-source"] * args.per_source_turns
    kinds += ["per-conversation"] * args.per_conversation_turns
    kinds += ["pre-embedded"] * args.pre_embedded_turns
    kinds += ["solo"] * args.solo_turns
    for kind in http_kinds:
        kinds += [kind] * args.http_turns
    rng.shuffle(kinds)
    return kinds


async def measure(
    args: argparse.Namespace,
    backend: SQLiteBackend,
    embedder: TimedEmbedder,
    conversations: list[list[str]],
    query_rng: random.Random,
    seen: set[str],
    http: dict[TurnKind, HttpTarget],
) -> dict[str, Any]:
    """Warm-up, then the scheduled turns; the summaries of every series and of solo runs."""
    logger = CountingLogger()
    measurer = Measurer(backend, embedder, args.limit, logger, args.back_to_back)
    for kind, target in http.items():
        measurer.add_http(kind, target.client, target.transport, target.settle)
    rng = random.Random(args.seed + 2)
    warm_kinds: tuple[TurnKind, ...] = (
        "native",
        "per-source",
        "per-conversation",
        "pre-embedded",
        "solo",
        *http,
    )
    schedule = _schedule(args, rng, list(http))
    queries = distinct_queries(query_rng, args.warmup + len(schedule), seen)

    series = {kind: Series(kind) for kind in SERIES_LABELS}
    solo_rows: list[dict[str, float]] = []
    cache_before = embedder.query_cache_info()
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
    cache_after = embedder.query_cache_info()
    return {
        "series": {kind: s.summary() for kind, s in series.items() if s.samples},
        "solo": solo_summary(solo_rows) if solo_rows else {},
        "query_cache": {
            "hits": cache_after.hits - cache_before.hits,
            "misses": cache_after.misses - cache_before.misses,
            "distinct_queries": len(queries),
        },
        "warning_examples": logger.messages[:5],
    }
