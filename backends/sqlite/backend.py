"""``SQLiteBackend``: the local engine behind the ``MemoryBackend`` protocol.

This class is the async facade: it validates input (``nams_local.validation``, the same
rules as the server), then runs one synchronous unit of work from the modules beside it
(``conversations``, ``entities``, ``reasoning``, ``tiers``) on the store's worker thread in
one transaction. A refused or failed call therefore writes nothing.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Concatenate, Literal, ParamSpec, TypeVar

from nams_local import export_format
from nams_local.__version__ import __version__
from nams_local.backend import (
    DEFAULT_LIST_LIMIT,
    DEFAULT_SEARCH_LIMIT,
    MAX_PAGE_LIMIT,
    Capabilities,
    MemoryBackend,
)
from nams_local.embeddings import Embedder, default_embedder
from nams_local.errors import InvalidInputError
from nams_local.extraction import (
    ExtractiveSummariser,
    Extractor,
    RuleExtractor,
    SkipEntity,
    Summariser,
)
from nams_local.item_checks import check_item_ops
from nams_local.items import ItemOp, ItemPut, ItemResult, ItemSearch
from nams_local.models import (
    Context,
    Conversation,
    ConversationSearchHits,
    ConversationTrace,
    Entity,
    EntityDetails,
    EntityGraph,
    EntityHistory,
    EntityProvenance,
    ExtractionStatus,
    FeedbackResult,
    MergeResult,
    Message,
    MetadataValue,
    NewMessage,
    Observation,
    QueryResult,
    ReasoningStep,
    Reflection,
    Relationship,
    SearchMode,
    SearchResult,
    StepExplanation,
    ToolCall,
    ToolCallStatus,
)
from nams_local.purge_report import PurgeReport, check_user_id
from nams_local.turns import TurnRecall, TurnRequest
from nams_local.validation import (
    check_date,
    check_entity_name,
    check_id,
    check_json_depth,
    check_limit,
    check_message,
    check_messages,
    check_metadata,
    check_mode,
    check_present,
    check_query,
    check_required,
    check_scalar_map,
    check_score,
    check_string_map,
    check_tool_call,
)

from . import (
    conversations,
    deferred_fts,
    entities,
    extraction_queue,
    imports,
    paged_reads,
    tiers,
    turns,
)
from . import cypher as cypher_graph
from . import export as exporter
from . import items as item_store
from . import purge as purging
from . import reasoning as steps_store
from .cypher_pool import CypherLimits
from .cypher_text import prepare as prepare_cypher
from .driver import DriverChoice
from .embedding_stats import API, ENTITIES
from .lanes import Lanes
from .legacy import LegacyMemory
from .pipeline import (
    DEFAULT_OBSERVATION_EVERY,
    DEFAULT_REFLECTION_EVERY,
    ExtractionMode,
    Pipeline,
    PipelineConfig,
    PipelineLanes,
)
from .resolution import DEFAULT_CANDIDATE_THRESHOLD, Resolution
from .search import DEFAULT_HYBRID_WEIGHT
from .store import Ctx, SQLiteStore, VectorIndexChoice, entity_text, message_partition
from .validity_rules import Supersession
from .vector_lane import conversation_key, partition_key
from .vectors import Vector, Vectors
from .writer import text_cost

__all__ = ["SQLiteBackend"]

P = ParamSpec("P")
R = TypeVar("R")


class SQLiteBackend(MemoryBackend):
    """Memory in one SQLite file (or ``":memory:"``), one workspace per instance.

    Args:
        path: the database file (created if missing) or ``":memory:"``.
        embedder: how texts become vectors; default the offline all-MiniLM-L6-v2.
        embeddings: ``False`` keeps text search only (like a hosted workspace without
            embeddings): nothing is embedded and searches report ``search_type="text"``.
        workspace: which workspace this instance reads and writes.
        vector_index: ``"sqlite-vec"``, ``"numpy"`` (brute force, no extension) or
            ``"auto"`` (sqlite-vec when it loads).
        hybrid_weight: weight of the vector score in hybrid search (0..1).
        driver: the DB-API module: ``"auto"`` (sqlean, which can load extensions),
            ``"sqlean"`` or ``"sqlite3"`` (the standard module; usually no extensions, so
            vectors use the numpy index).
        extraction: ``"sync"`` (messages are extracted before ``add_message`` returns),
            ``"background"`` (a task per conversation; see ``wait_for_extraction``) or
            ``"off"`` (no extraction, no observations or reflections).
        extractor: turns messages into entities and relationships; default the offline
            ``RuleExtractor``; ``None`` extracts nothing (summaries still run).
        skip_entity: replaces the meta-entity guard (provider-behavior §6.4) that drops
            extracted names such as "memory" or "preferences".
        summariser: writes observations and reflections; default the offline
            ``ExtractiveSummariser``; ``None`` writes none.
        observation_every: messages per observation; ``reflection_every``: observations
            per reflection (which supersedes the previous one).
        entity_aliases: alias → canonical name; an entity added under an alias reuses the
            canonical entity (with ``resolution``-style matching on both sides).
        merge_candidate_threshold: similarity (0..1] from which a near name of the same
            type is reported as a merge candidate when an entity is added.
        cypher_timeout: seconds a ``query`` may run before it is stopped (default 5).
        cypher_limits: every Cypher bound (time, memory, rows, workers, per-workspace
            concurrency and queue): a ``cypher_pool.CypherLimits`` or a mapping of its
            fields; ``cypher_timeout``, if given too, replaces its timeout. Shared by every
            workspace of the store.
        single_valued_types: relationship types a subject holds one of at a time (a new
            one closes the previous; see ``validity.py``); default
            ``validity_rules.DEFAULT_SINGLE_VALUED`` (lives in, works at, married to …).
        supersession: ``False`` never closes an edge on write (every fact stays current,
            as before relationships had validity); edges still record their dates.
        vectors_before_ack: a message write returns once its vector is stored (bounded
            like a search's wait), not once it is queued: for several processes serving
            one file, whose searches cannot see each other's vector queues.
    """

    def __init__(
        self,
        path: str | Path = ":memory:",
        *,
        embedder: Embedder | None = None,
        embeddings: bool = True,
        workspace: str = "default",
        vector_index: VectorIndexChoice = "auto",
        hybrid_weight: float = DEFAULT_HYBRID_WEIGHT,
        driver: DriverChoice = "auto",
        extraction: ExtractionMode = "sync",
        extractor: Extractor | Literal["default"] | None = "default",
        skip_entity: SkipEntity | None = None,
        summariser: Summariser | Literal["default"] | None = "default",
        observation_every: int = DEFAULT_OBSERVATION_EVERY,
        reflection_every: int = DEFAULT_REFLECTION_EVERY,
        entity_aliases: Mapping[str, str] | None = None,
        merge_candidate_threshold: float = DEFAULT_CANDIDATE_THRESHOLD,
        cypher_timeout: float | None = None,
        cypher_limits: CypherLimits | Mapping[str, Any] | None = None,
        single_valued_types: Iterable[str] | None = None,
        supersession: bool = True,
        vectors_before_ack: bool = False,
        _store: SQLiteStore | None = None,
    ) -> None:
        check_required(workspace, "workspace")
        if not 0.0 <= hybrid_weight <= 1.0:
            raise InvalidInputError("hybrid_weight must be from 0 to 1")
        if extraction not in ("sync", "background", "off"):
            raise InvalidInputError("extraction must be 'sync', 'background' or 'off'")
        if observation_every < 1 or reflection_every < 1:
            raise InvalidInputError("observation_every and reflection_every must be >= 1")
        if _store is None:
            if isinstance(cypher_limits, Mapping):
                cypher_limits = CypherLimits(**cypher_limits)
            limits = cypher_limits or CypherLimits()
            if cypher_timeout is not None:
                limits = dataclasses.replace(limits, timeout=cypher_timeout)
            chosen = (embedder or default_embedder()) if embeddings else None
            try:
                resolution = Resolution(entity_aliases or {}, merge_candidate_threshold)
            except ValueError as error:
                raise InvalidInputError(str(error)) from None
            _store = SQLiteStore(
                path,
                embedder=chosen,
                vector_index=vector_index,
                driver=driver,
                resolution=resolution,
                lanes=Lanes(cypher=limits),
                supersession=Supersession.of(single_valued_types, supersession),
            )
            self._owns_store = True
            # Full-text rows a previous process left queued: indexed in the background.
            deferred_fts.resume(
                _store, _store.run_sync(deferred_fts.pending_workspaces, Ctx(_store, ""))
            )
        else:
            self._owns_store = False
        self._store = _store
        self.workspace = workspace
        #: A message write returns once its vector is stored, not only queued: what
        #: ``serve --workers N`` needs, as another process's vector search cannot wait
        #: for this process's in-memory vector queue (docs/sharing-a-file.md, "Workers").
        self.vectors_before_ack = vectors_before_ack
        self.hybrid_weight = hybrid_weight
        self._ctx = Ctx(_store, workspace)
        chosen_extractor = RuleExtractor() if extractor == "default" else extractor
        # The default summariser's facts come from the rule extractor; sharing the
        # engine's (and its cache) means each message is analysed once.
        rules = chosen_extractor if isinstance(chosen_extractor, RuleExtractor) else None
        self._pipeline_config = PipelineConfig(
            extractor=chosen_extractor,
            summariser=(
                ExtractiveSummariser(extractor=rules or RuleExtractor())
                if summariser == "default"
                else summariser
            ),
            mode=extraction,
            skip_entity=skip_entity,
            observation_every=observation_every,
            reflection_every=reflection_every,
        )
        self._pipeline = Pipeline(
            PipelineLanes(
                run=self._run_unit,
                background=self._run_background,
                read=self._read_unit,
                embed=functools.partial(self._embed, caller=ENTITIES),
                has_vectors=_store.vectors is not None,
                resume_workspace=self._resume_workspace,
                claim_resume=_store.claim_resume,
            ),
            self._pipeline_config,
        )
        self._capabilities = Capabilities(
            relationship_writes=True,
            relationship_validity=True,
            entity_by_name=True,
            user_message_search=True,
            graph_neighbourhood=True,
            vector_search=_store.vectors is not None,
            cypher_query=True,
            relevance_scores=_store.vectors is not None,
            user_purge=True,
            message_delete=True,
        )

    def for_workspace(self, workspace: str) -> SQLiteBackend:
        """Another workspace of the same store; closing it leaves the store open."""
        config = self._pipeline_config
        return SQLiteBackend(
            workspace=workspace,
            hybrid_weight=self.hybrid_weight,
            extraction=config.mode,
            extractor=config.extractor,
            skip_entity=config.skip_entity,
            summariser=config.summariser,
            observation_every=config.observation_every,
            reflection_every=config.reflection_every,
            vectors_before_ack=self.vectors_before_ack,
            _store=self._store,
        )

    @property
    def capabilities(self) -> Capabilities:
        return self._capabilities

    @property
    def store(self) -> SQLiteStore:
        return self._store

    def info(self) -> dict[str, Any]:
        """What this engine is and holds (for ``nams-local info``)."""
        store = self._store
        vectors = store.vectors
        return {
            "backend": "sqlite",
            "path": store.path,
            "workspace": self.workspace,
            "driver": store.driver.module,
            "sqlite_version": store.driver.sqlite_version,
            "fts5": store.driver.fts5,
            "sqlite_vec": store.driver.vec_version or f"unavailable ({store.driver.vec_error})",
            "vector_index": vectors.messages.kind if vectors else "off (text search only)",
            "embedder": vectors.embedder.name if vectors else "none",
            "dimension": vectors.embedder.dimension if vectors else 0,
            "counts": store.run_sync(store.counts),
            "workspaces": store.run_sync(store.workspace_counts),
        }

    async def item_batch(self, ops: Sequence[ItemOp]) -> list[ItemResult]:
        """``SupportsItems``: namespaced key/value items (``items.py``), one transaction.

        Texts and queries are embedded first, in the embedding lane, so the writer thread
        never waits for the model."""
        batch = list(ops)
        check_item_ops(batch)
        put_vectors: dict[int, bytes] = {}
        query_vectors: dict[int, Vector] = {}
        if self._store.vectors is not None:
            texts = [
                (n, op.text)
                for n, op in enumerate(batch)
                if isinstance(op, ItemPut) and op.value is not None and op.text
            ]
            matrix = await self._embed([t for _, t in texts]) if texts else None
            if matrix is not None:
                put_vectors = {n: matrix[row].tobytes() for row, (n, _) in enumerate(texts)}
            for n, op in enumerate(batch):
                if isinstance(op, ItemSearch) and op.query and op.query.strip():
                    vector = await self._embed_query(op.query, "hybrid")
                    if vector is not None:
                        query_vectors[n] = vector
        return await self._run(
            item_store.run_batch,
            batch,
            put_vectors,
            query_vectors,
            time.time(),
            self.hybrid_weight,
        )

    def _search_mode(self, mode: SearchMode | None) -> SearchMode:
        return conversations.resolve_mode(self._store.vectors is not None, check_mode(mode))

    async def _embed(self, texts: list[str], caller: str = API) -> Vectors | None:
        """Embed in the store's embedding lane, so the database thread never waits for the
        model and no workspace holds every embedding thread. ``caller`` names who asks
        (``embedding_stats``)."""
        vectors = self._store.vectors
        if vectors is None:
            return None
        return await self._store.lanes.embed.run(
            self.workspace, vectors.embedder.embed, texts, caller
        )

    async def _embed_query(self, query: str, mode: SearchMode) -> Vector | None:
        vectors = self._store.vectors
        if vectors is None or mode == "text":
            return None
        batcher = vectors.embedder
        if not batcher.batches_queries:  # an Embedder of its own kind: its own embed_query
            return await self._store.lanes.embed.run(self.workspace, batcher.embed_query, query)
        # No thread hop: a cached query is done at once; a new one joins the model
        # thread's next run with every other waiting query (embedding_batcher).
        future = batcher.query(query)
        if not future.done():  # shielded: the future is shared with identical queries
            await asyncio.shield(asyncio.wrap_future(future))
        vector = future.result()
        return vector.copy()

    async def _vector_room(self) -> None:
        """Backpressure: wait while the vector lane has too much queued."""
        lane = self._store.vector_lane
        if lane is not None:
            await lane.wait_for_room()

    async def _embed_query_settled(self, query: str, mode: SearchMode, *keys: str) -> Vector | None:
        """The query's vector, once this scope's queued rows are embedded too: both at
        once, so a search waits for the longer of the two rather than their sum."""
        lane = self._store.vector_lane
        if lane is None or mode == "text" or not lane.has_pending(keys):
            return await self._embed_query(query, mode)
        embedding = asyncio.ensure_future(self._embed_query(query, mode))
        try:
            await self._vectors_settled(mode, *keys)
        except BaseException:
            if not embedding.cancel() and not embedding.cancelled():
                embedding.exception()  # retrieved: only the wait's failure is reported
            raise
        return await embedding

    async def _vectors_settled(self, mode: SearchMode, *keys: str) -> None:
        """Read-your-writes for vector search: wait for this scope's queued rows."""
        lane = self._store.vector_lane
        if lane is not None and mode != "text":
            await lane.settled(keys)

    async def _read(
        self, fn: Callable[Concatenate[Ctx, P], R], *args: P.args, **kwargs: P.kwargs
    ) -> R:
        """A unit of work that only reads SQL: on a reader thread for file databases (at
        most ``lanes.READ_LIMITS.per_workspace`` of them for one workspace at once).
        In sync extraction mode it first waits for the extraction of earlier writes."""
        await self._pipeline.settled()
        return await self._read_unit(fn, *args, **kwargs)

    async def _read_unit(
        self, fn: Callable[Concatenate[Ctx, P], R], *args: P.args, **kwargs: P.kwargs
    ) -> R:
        """``_read`` without waiting for extraction (the pipeline's own reads)."""
        self._pipeline.start()

        async def read(ctx: Ctx) -> R:
            async with self._store.lanes.reads.slot(self.workspace):
                return await self._store.read(fn, ctx, *args, **kwargs)

        # A read of a workspace with queued full-text rows settles them first.
        return await deferred_fts.read_indexed(self._store, self._ctx, read)

    async def _run(
        self, fn: Callable[Concatenate[Ctx, P], R], *args: P.args, **kwargs: P.kwargs
    ) -> R:
        """A unit of work on the writer; in sync extraction mode it first waits for the
        extraction of earlier writes (what the caller reads or changes next includes it)."""
        await self._pipeline.settled()
        return await self._run_unit(fn, *args, **kwargs)

    async def _run_unit(
        self, fn: Callable[Concatenate[Ctx, P], R], *args: P.args, **kwargs: P.kwargs
    ) -> R:
        """``_run`` without waiting for extraction (message writes, the pipeline's units)."""
        self._pipeline.start()
        return await self._store.run(fn, self._ctx, *args, **kwargs)

    async def _store_messages(
        self, conversation_id: str, messages: list[NewMessage]
    ) -> tuple[list[Message], extraction_queue.Start | None]:
        """Write messages as one unit whose writer cost is their text (``writer.py``)."""
        self._pipeline.start()
        chars = sum(len(m.content) for m in messages)
        if deferred_fts.should_defer(chars):
            await self._store.fts_backlog.room(self.workspace)
        cost = text_cost(chars, len(messages))
        return await self._store.run_weighted(
            cost,
            extraction_queue.store_messages,
            self._ctx,
            conversation_id,
            messages,
            None,
            self._pipeline.queues_messages,
        )

    async def _run_background(
        self, fn: Callable[Concatenate[Ctx, P], R], *args: P.args, **kwargs: P.kwargs
    ) -> R:
        self._pipeline.start()
        return await self._store.run_background(fn, self._ctx, *args, **kwargs)

    async def _resume_workspace(self, workspace: str) -> None:
        """Resume the pending extraction of ``workspace`` (the pipeline's store-wide
        resume on first use): this view's own, or a sibling view's until it is done."""
        if workspace == self.workspace:
            await self._pipeline.resume()
            return
        view = self.for_workspace(workspace)
        try:
            await view.resume_extraction()
        finally:
            await view.aclose()

    # -- conversations ---------------------------------------------------------------
    async def create_conversation(
        self, user_id: str | None = None, metadata: Mapping[str, MetadataValue] | None = None
    ) -> Conversation:
        check_scalar_map(metadata, "conversation metadata")
        return await self._run(
            conversations.create_conversation, user_id, None if metadata is None else dict(metadata)
        )

    async def list_conversations(
        self, user_id: str | None = None, limit: int = DEFAULT_LIST_LIMIT
    ) -> list[Conversation]:
        check_limit(limit)
        return await self._read(conversations.list_conversations, user_id, limit)

    async def get_conversation(self, conversation_id: str) -> Conversation:
        return await self._read(conversations.get_conversation, conversation_id)

    async def delete_conversation(self, conversation_id: str) -> None:
        await self._run(conversations.delete_conversation, conversation_id)

    async def delete_message(self, conversation_id: str, message_id: str) -> None:
        """``SupportsMessageDelete`` (the inspector's and ``DELETE /v1/conversations/{id}/
        messages/{messageId}``'s "delete a message")."""
        check_id(conversation_id, "conversation id")
        check_id(message_id, "message id")
        await self._run(conversations.delete_message, conversation_id, message_id)

    # -- messages --------------------------------------------------------------------
    async def add_message(
        self,
        conversation_id: str,
        role: str,
        content: str,
        metadata: dict[str, Any] | None = None,
    ) -> Message:
        check_message(role, content)
        check_metadata(metadata)
        message = NewMessage(role=role, content=content, metadata=metadata)
        await self._vector_room()
        [stored], start = await self._store_messages(conversation_id, [message])
        await self._pipeline.after_write(conversation_id, [stored.id], start)
        await self._vectors_stored(conversation_id)
        return stored

    async def add_messages(
        self, conversation_id: str, messages: Sequence[NewMessage]
    ) -> list[Message]:
        check_messages(messages)
        await self._vector_room()
        stored, start = await self._store_messages(conversation_id, list(messages))
        await self._pipeline.after_write(conversation_id, [m.id for m in stored], start)
        await self._vectors_stored(conversation_id)
        return stored

    async def _vectors_stored(self, conversation_id: str) -> None:
        """With ``vectors_before_ack``: wait (bounded, as a search waits) for the vectors
        of the conversation's queued messages, the ones just written included."""
        if self.vectors_before_ack:
            await self._vectors_settled("vector", conversation_key(conversation_id))

    async def persist_turn(
        self, conversation_id: str, messages: Sequence[NewMessage]
    ) -> list[Message]:
        """``SupportsTurns``: a turn's messages in one unit of work (``add_messages``)."""
        return await self.add_messages(conversation_id, messages)

    async def recall_turn(self, request: TurnRequest) -> TurnRecall:
        """``SupportsTurns``: the first round of a turn's retrieval in one call
        (``turns.py``): the query embedded once, every source in two reader jobs run at
        once (messages and steps; entities and their relationships)."""
        check_query(request.query)
        check_limit(request.message_limit, name="message_limit")
        check_limit(request.entity_limit, name="entity_limit")
        cross = request.conversation_limit > 0
        if cross:
            check_limit(request.conversation_limit, name="conversation_limit")
            check_limit(request.per_conversation_limit, name="per_conversation_limit")
        await self._pipeline.settled()
        mode = self._search_mode(None)
        keys = [conversation_key(request.conversation_id)]
        if cross:
            keys.append(partition_key(message_partition(self.workspace, request.user_id)))
        vector, user_vector = await self._turn_vectors(request, mode, keys)
        weight = self.hybrid_weight
        read, found = await asyncio.gather(
            self._read_unit(turns.turn_message_reads, request, vector, mode, weight),
            self._read_unit(turns.turn_entity_reads, request, vector, user_vector, mode, weight),
        )
        return TurnRecall(
            messages=read.messages,
            entities=found.entities,
            steps=read.steps,
            cross_session=read.cross_session,
            user=found.user,
            details=found.details,
        )

    async def _turn_vectors(
        self, request: TurnRequest, mode: SearchMode, keys: list[str]
    ) -> tuple[turns.VectorSource, turns.VectorSource]:
        """The turn's query vectors for its reader jobs (``turns.py``): still being computed
        when they can be (the model embeds while the jobs run their text SQL), computed
        first when the scope has message vectors queued (the jobs' read transactions must
        start after they are written) or the embedder does not batch queries."""
        vectors = self._store.vectors
        lane = self._store.vector_lane
        if (
            vectors is not None
            and mode != "text"
            and vectors.embedder.batches_queries
            and not (lane is not None and lane.has_pending(keys))
        ):
            query = turns.pending_vector(vectors.embedder.query(request.query))
            mine = turns.ready_vector(None)
            if request.user_entity:
                mine = turns.pending_vector(vectors.embedder.query(turns.USER_QUERY))
            return query, mine
        vector = await self._embed_query(request.query, mode)
        user_vector = (
            await self._embed_query(turns.USER_QUERY, mode) if request.user_entity else None
        )
        await self._vectors_settled(mode, *keys)
        return turns.ready_vector(vector), turns.ready_vector(user_vector)

    async def wait_for_extraction(self, conversation_id: str | None = None) -> None:
        """Return once queued extraction and summaries of ``conversation_id`` (default:
        every conversation) are written. Immediate in ``"off"`` mode; in ``"sync"`` mode every
        other call waits for it anyway."""
        await self._pipeline.wait(conversation_id)

    async def resume_extraction(self) -> int:
        """Extract what a previous process left ``pending`` (background mode stopped
        mid-queue): queued in background mode, done before returning in sync mode.
        Returns how many conversations had pending messages."""
        return await self._pipeline.resume()

    async def list_messages(
        self, conversation_id: str, limit: int = DEFAULT_LIST_LIMIT
    ) -> list[Message]:
        check_limit(limit)
        return await self._read(conversations.list_messages, conversation_id, limit)

    async def conversations_page(
        self, after: str | None = None, limit: int = MAX_PAGE_LIMIT
    ) -> list[Conversation]:
        """``SupportsPagedReads``: conversations in creation order (``paged_reads.py``)."""
        check_limit(limit, maximum=MAX_PAGE_LIMIT)
        return await self._read(paged_reads.conversations_page, after, limit)

    async def messages_page(
        self,
        conversation_id: str,
        after: str | None = None,
        limit: int = MAX_PAGE_LIMIT,
        *,
        skip: int = 0,
    ) -> list[Message]:
        """``SupportsPagedReads``: a conversation's messages oldest first, keyset-paged."""
        check_limit(limit, maximum=MAX_PAGE_LIMIT)
        if isinstance(skip, bool) or not isinstance(skip, int) or skip < 0:
            raise InvalidInputError(f"skip must be a non-negative integer, got {skip!r}")
        return await self._read(paged_reads.messages_page, conversation_id, after, skip, limit)

    async def search_messages(
        self,
        conversation_id: str,
        query: str,
        limit: int = DEFAULT_SEARCH_LIMIT,
        mode: SearchMode | None = None,
    ) -> SearchResult[Message]:
        check_query(query)
        check_limit(limit)
        run_mode = self._search_mode(mode)
        query_vector = await self._embed_query_settled(
            query, run_mode, conversation_key(conversation_id)
        )
        return await self._read(
            conversations.search_messages,
            conversation_id,
            query,
            query_vector,
            limit,
            run_mode,
            self.hybrid_weight,
        )

    # -- context, observations, reflections, extraction status ------------------------
    async def get_context(self, conversation_id: str) -> Context:
        return await self._read(tiers.get_context, conversation_id)

    async def list_observations(
        self, conversation_id: str, limit: int = DEFAULT_LIST_LIMIT
    ) -> list[Observation]:
        check_limit(limit)
        return await self._read(tiers.list_observations, conversation_id, limit)

    async def list_reflections(self, conversation_id: str) -> list[Reflection]:
        return await self._read(tiers.list_reflections, conversation_id)

    async def get_extraction_status(self, conversation_id: str) -> ExtractionStatus:
        return await self._read(tiers.get_extraction_status, conversation_id)

    # -- entities --------------------------------------------------------------------
    async def add_entity(
        self,
        name: str,
        type: str,
        description: str | None = None,
        properties: dict[str, str] | None = None,
    ) -> Entity:
        name = check_entity_name(name)
        type = check_required(type, "type")
        check_string_map(properties, "entity properties")
        # A name that resolves to an existing entity is reused: embed only new ones.
        known = await self._run(entities.find_entity, name, type)
        vector = None if known else await self._embed([entity_text(name, description)])
        entity = await self._run(
            entities.add_entity, name, type, description, properties, vector, candidates=False
        )
        if not entity.reused:  # near names: compared on this workspace's read lane
            found = await self._read(entities.merge_candidates, entity.id, name, type)
            entity.merge_candidates = found or entity.merge_candidates
        return entity

    async def list_entities(self, type: str | None = None) -> list[Entity]:
        return await self._read(entities.list_entities, type)

    async def get_entity(self, entity_id: str) -> EntityDetails:
        return await self._read(entities.get_entity, entity_id)

    async def update_entity(
        self, entity_id: str, name: str | None = None, description: str | None = None
    ) -> None:
        if name is None and description is None:
            raise InvalidInputError("nothing to update: give a name or a description")
        if name is not None:
            name = check_entity_name(name)
        current = await self._run(entities.entity_row, entity_id)
        vector = await self._embed(
            [
                entity_text(
                    name if name is not None else current.name,
                    description if description is not None else current.description,
                )
            ]
        )
        await self._run(entities.update_entity, entity_id, name, description, vector)

    async def delete_entity(self, entity_id: str) -> None:
        await self._run(entities.delete_entity, entity_id)

    async def search_entities(
        self,
        query: str,
        type: str | None = None,
        limit: int = DEFAULT_SEARCH_LIMIT,
        mode: SearchMode | None = None,
    ) -> SearchResult[Entity]:
        check_query(query)
        check_limit(limit)
        run_mode = self._search_mode(mode)
        query_vector = await self._embed_query(query, run_mode)
        return await self._read(
            entities.search_entities, query, query_vector, type, limit, run_mode, self.hybrid_weight
        )

    async def entity_feedback(
        self, entity_id: str, user_score: float | None = None, confirmed: bool | None = None
    ) -> FeedbackResult:
        check_score(user_score)
        return await self._run(entities.entity_feedback, entity_id, user_score, confirmed)

    async def get_entity_history(self, entity_id: str) -> EntityHistory:
        return await self._read(entities.get_history, entity_id)

    async def merge_entities(self, source_id: str, target_id: str) -> MergeResult:
        check_required(target_id, "target_id")
        return await self._run(entities.merge_entities, source_id, target_id)

    async def get_graph(self, as_of: str | None = None) -> EntityGraph:
        return await self._run(entities.get_graph, check_date(as_of, "as_of"))

    # -- reasoning -------------------------------------------------------------------
    async def record_step(
        self,
        conversation_id: str,
        reasoning: str,
        action_taken: str,
        result: str | None = None,
    ) -> ReasoningStep:
        check_present(reasoning, "reasoning")
        check_present(action_taken, "action_taken")
        return await self._run(
            steps_store.record_step, conversation_id, reasoning, action_taken, result
        )

    async def list_steps(self, conversation_id: str) -> list[ReasoningStep]:
        return await self._read(steps_store.list_steps, conversation_id)

    async def record_tool_call(
        self,
        tool_name: str,
        input: str,
        output: str | None = None,
        status: ToolCallStatus | str | None = None,
        step_id: str | None = None,
        duration_ms: int | None = None,
    ) -> ToolCall:
        check_required(tool_name, "tool_name")
        parsed = check_tool_call(input, status, duration_ms)
        return await self._run(
            steps_store.record_tool_call,
            tool_name,
            input,
            output,
            parsed,
            step_id,
            duration_ms,
        )

    async def get_trace(self, conversation_id: str) -> ConversationTrace:
        return await self._read(steps_store.get_trace, conversation_id)

    async def explain_step(self, step_id: str) -> StepExplanation:
        return await self._read(steps_store.explain_step, step_id)

    async def get_provenance(self, entity_id: str) -> EntityProvenance:
        return await self._read(steps_store.get_provenance, entity_id)

    # -- query -----------------------------------------------------------------------
    async def query(self, cypher: str, params: dict[str, Any] | None = None) -> QueryResult:
        """Read-only Cypher over the workspace's memory graph (``docs/cypher.md``); writes,
        procedures and file loads are refused before
        anything is read. The query runs in a Cypher worker process within the store's
        limits (``cypher_pool.CypherLimits``); cancelling the call kills that worker."""
        check_json_depth(params, "params")  # before anything walks them (issue 16)
        statement = prepare_cypher(check_required(cypher, "cypher"), params)
        lanes = self._store.lanes
        async with lanes.cypher_slots.slot(self.workspace):
            version = await self._read(cypher_graph.current_generation)
            return await lanes.cypher.run(
                statement, self.workspace, version, lambda: self._read(cypher_graph.load_projection)
            )

    # -- extensions ------------------------------------------------------------------
    async def add_relationship(
        self,
        source_id: str,
        target_id: str,
        type: str,
        properties: dict[str, Any] | None = None,
        confidence: float | None = None,
        *,
        valid_from: str | None = None,
        valid_until: str | None = None,
        supersede: bool = True,
    ) -> Relationship:
        type = check_required(type, "type")
        check_metadata(properties, "properties")
        if confidence is not None and not 0.0 <= confidence <= 1.0:
            raise InvalidInputError("confidence must be from 0 to 1")
        return await self._run(
            entities.add_relationship,
            source_id,
            target_id,
            type,
            properties,
            confidence,
            valid_from=check_date(valid_from, "valid_from"),
            valid_until=check_date(valid_until, "valid_until"),
            supersede=bool(supersede),
        )

    async def delete_relationship(self, relationship_id: str) -> None:
        await self._run(entities.delete_relationship, relationship_id)

    async def invalidate_relationship(
        self, relationship_id: str, valid_until: str | None = None
    ) -> Relationship:
        check_required(relationship_id, "relationship_id")
        until = check_date(valid_until, "valid_until")
        return await self._run(entities.invalidate_relationship, relationship_id, until)

    async def get_entity_by_name(self, name: str, type: str | None = None) -> Entity | None:
        check_required(name, "name")
        return await self._read(entities.get_entity_by_name, name, type)

    async def search_user_messages(
        self,
        user_id: str,
        query: str,
        *,
        conversation_limit: int = 5,
        per_conversation_limit: int = 4,
        exclude_conversation_id: str | None = None,
        include_steps: bool = True,
    ) -> list[ConversationSearchHits]:
        check_required(user_id, "user_id")
        check_query(query)
        check_limit(conversation_limit, name="conversation_limit")
        check_limit(per_conversation_limit, name="per_conversation_limit")
        run_mode = self._search_mode(None)
        query_vector = await self._embed_query_settled(
            query, run_mode, partition_key(message_partition(self.workspace, user_id))
        )
        return await self._read(
            conversations.search_user_messages,
            user_id,
            query,
            query_vector,
            conversation_limit,
            per_conversation_limit,
            exclude_conversation_id,
            include_steps,
            self.hybrid_weight,
        )

    async def entity_neighbourhood(
        self, entity_id: str, depth: int = 1, as_of: str | None = None
    ) -> EntityGraph:
        check_limit(depth, name="depth", maximum=5)
        return await self._run(entities.neighbourhood, entity_id, depth, check_date(as_of, "as_of"))

    async def purge_user(self, user_id: str) -> PurgeReport:
        """Delete every trace of ``user_id`` in this workspace, then compact a file so the
        text is gone from its bytes (``purge.py``; the compaction holds every workspace's
        writes for its duration, under a second per 10k messages; a purge that deleted
        nothing skips it)."""
        user_id = check_user_id(user_id)
        await self.wait_for_extraction()  # nothing of the user's is written after it
        report = await self._run(purging.purge_user, user_id)
        if purging.needs_compaction(self._store, report):
            report.compaction_seconds = round(await purging.compact(self._store), 3)
            report.compacted = True
        return report

    async def reset_workspace(self) -> None:
        """Delete everything this workspace holds, in one transaction; other workspaces of
        the store are untouched (``SupportsWorkspaceReset``)."""
        await self.legacy.clear_workspace()

    # -- export and import (``nams_local.export_format``; docs/export-format.md) --
    def export_header(
        self, *, user_id: str | None = None, with_vectors: bool = False
    ) -> export_format.ExportHeader:
        """``SupportsExport``: the first line of this workspace's export."""
        vectors = self._store.vectors if with_vectors else None
        return export_format.ExportHeader(
            format="nams-local-export",
            version=export_format.VERSION,
            workspace=self.workspace,
            user=user_id,
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
            nams_local=__version__,
            with_vectors=vectors is not None,
            embedder=vectors.embedder.name if vectors else None,
            dimension=vectors.embedder.dimension if vectors else None,
        )

    def export_records(
        self, *, user_id: str | None = None, with_vectors: bool = False
    ) -> Iterator[Any]:
        """``SupportsExport``: every record of the workspace (or of ``user_id``), streamed
        page by page from one read snapshot (``export.py``); blocking."""
        vectors = self._store.vectors if with_vectors else None
        with self._store.snapshot() as read:
            yield from exporter.iter_records(read, self.workspace, user_id=user_id, vectors=vectors)

    async def import_batch(
        self,
        header: export_format.ExportHeader,
        records: Sequence[export_format.NumberedRecord],
    ) -> export_format.BatchResult:
        """``SupportsImport``: one batch, kept as it is, in one transaction (``imports.py``).
        Entities and items new to the store without a usable vector in the file are
        embedded first, in the embedding lane; messages go to the vector lane."""
        batch = list(records)
        wanted = await self._read(imports.needs_embedding, header, batch)
        embedded: dict[int, Vector] = {}
        if wanted:
            matrix = await self._embed([text for _, text in wanted])
            if matrix is not None:
                embedded = {n: matrix[row] for row, (n, _) in enumerate(wanted)}
        return await self._run(imports.write_batch, header, batch, embedded)

    # -- legacy memory (bridge) --
    # Sessions, preferences, facts, task traces and tool stats (the original agent-memory
    # concepts the hosted API lacks) live in the ``legacy`` sub-package; the TCK bridge
    # uses them too.
    @functools.cached_property
    def legacy(self) -> LegacyMemory:
        """The legacy memory API of this workspace (same store, same transaction rules)."""
        return LegacyMemory(self._store, self._ctx, self._embed)

    # -- lifecycle -------------------------------------------------------------------
    async def aclose(self) -> None:
        await self._pipeline.aclose()
        if self._owns_store:
            self._store.close()
