"""The extraction pipeline: messages in, entities, relationships and summaries out.

Hosted NAMS extracts every persisted user/assistant message into its entity graph in the
background and summarises conversations into observations and reflections. This is the
same, locally, with a pluggable :class:`~nams_local.extraction.Extractor` (default: the
offline :class:`~nams_local.extraction.RuleExtractor`) and
:class:`~nams_local.extraction.Summariser` (default: the offline extractive one).

Modes:

- ``"sync"`` (default; what tests and a CI fake want): every call of the backend sees the
  extraction and summaries of the messages written before it. ``add_message`` itself
  returns as soon as the message and its ``pending`` unit are committed (so a chat turn's
  persistence costs the caller two commits, not two extractions); the extraction starts
  right away, and the backend's next call that is not a message write (``settled``) waits
  for it first. Nothing acknowledged can be lost: the unit is in the database, and a
  process that dies before extracting it leaves it to the next open.
- ``"background"`` (what ``nams-local serve`` uses, like hosted NAMS): ``add_message``
  returns once the message and its ``pending`` unit are committed; a task per
  conversation works through the queue in order; ``wait_for_extraction(conversation_id)``
  waits for it — and for units still ``pending`` in the database that another process (or
  one that died) left, which it takes over.
- ``"off"``: nothing is extracted or summarised (messages report status ``skipped``).

The queue is the ``extraction_units`` table, so it survives the process: the first call
on a store (``Pipeline.start``) resumes every unit left ``pending`` in any of its
workspaces, in the background, in either mode.

The pipeline is handed what it needs (``PipelineLanes``: run a unit of work on the writer,
read on a reader, embed texts) rather than the backend, so it never reaches into it.

Nothing here can fail a write: an extractor that raises marks its message's unit
``failed`` (with the error) and logs a warning; a failing summariser logs a warning.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Concatenate, Literal, ParamSpec, Protocol, TypeVar

from nams_local.extraction import (
    USER_DESCRIPTION,
    Extraction,
    ExtractionInput,
    Extractor,
    RuleExtractor,
    SkipEntity,
    Summariser,
)

from . import extraction_queue as q
from . import graph_writes as g
from . import summaries as sm
from .store import Ctx, entity_text
from .vectors import Vectors

__all__ = [
    "APPLY_FACTS",
    "DEFAULT_OBSERVATION_EVERY",
    "DEFAULT_REFLECTION_EVERY",
    "EXTRACTION_BATCH",
    "WAIT_SECONDS",
    "ExtractionMode",
    "Pipeline",
    "PipelineConfig",
    "PipelineLanes",
    "RunUnit",
    "apply_chunks",
]

P = ParamSpec("P")
R = TypeVar("R")

log = logging.getLogger("nams_local.extraction")

ExtractionMode = Literal["sync", "background", "off"]

#: An observation summarises this many messages; a reflection this many observations.
DEFAULT_OBSERVATION_EVERY = 10
DEFAULT_REFLECTION_EVERY = 3
#: Preceding messages handed to the extractor as context.
RECENT_CONTEXT = 4
#: Pending messages one unit of work of queued extraction takes at most.
EXTRACTION_BATCH = 64
#: What one unit of work applying extractions writes at most: messages plus their
#: entities and relationships (a single message over it is a unit of its own).
APPLY_FACTS = 24
#: How long ``wait`` waits at most for units another process is working on.
WAIT_SECONDS = 60.0
#: How often ``wait`` looks at the database while another process works.
_POLL_SECONDS = 0.05


class RunUnit(Protocol):
    """Runs ``fn(ctx, *args, **kwargs)`` as a unit of work of the backend's workspace."""

    async def __call__(
        self, fn: Callable[Concatenate[Ctx, P], R], *args: P.args, **kwargs: P.kwargs
    ) -> R: ...


@dataclass(frozen=True, slots=True)
class PipelineLanes:
    """What the pipeline needs from its backend, given explicitly."""

    #: A unit of work on the writer thread (one transaction, committed before it returns).
    run: RunUnit
    #: A unit of work at background priority (queued extraction: it yields to request
    #: writes on the writer thread).
    background: RunUnit
    #: A read-only unit of work (a reader thread on file databases).
    read: RunUnit
    #: Texts to vectors off the database threads; ``None`` with embeddings off.
    embed: Callable[[list[str]], Awaitable[Vectors | None]]
    #: Whether the store keeps vectors (new entities then need one).
    has_vectors: bool
    #: Every workspace with work left ``pending`` gets its extraction resumed by this:
    #: ``(workspace) -> awaitable`` that queues and finishes it (once per store).
    resume_workspace: Callable[[str], Awaitable[None]]
    #: Claims the store-wide resume (``True`` once per store, for the first caller).
    claim_resume: Callable[[], bool]


@dataclass(frozen=True, slots=True)
class PipelineConfig:
    extractor: Extractor | None
    summariser: Summariser | None
    mode: ExtractionMode
    skip_entity: SkipEntity | None
    observation_every: int
    reflection_every: int


def _watch(task: asyncio.Task[None]) -> Future[object]:
    """A thread-safe future done when ``task`` (on another running loop) is done."""
    done: Future[object] = Future()

    def finished(_: asyncio.Task[None]) -> None:
        if not done.done():
            done.set_result(None)

    task.get_loop().call_soon_threadsafe(task.add_done_callback, finished)
    return done


class Pipeline:
    """Runs extraction and summaries for one backend (see the module docstring)."""

    def __init__(self, lanes: PipelineLanes, config: PipelineConfig) -> None:
        self.lanes = lanes
        self.config = config
        #: The drain task of each conversation with queued work (``_queue``).
        self._jobs: dict[str, asyncio.Task[None]] = {}
        #: Conversations with work queued since their drain task last looked.
        self._dirty: set[str] = set()
        #: Resuming what earlier processes left pending (``start``), while it runs.
        self._resuming: asyncio.Task[None] | None = None
        self._started = False
        #: With the built-in (CPU-bound) rule extractor, one batch of this workspace is
        #: extracted at a time, whatever the number of conversations draining: a long
        #: text's extraction runs on a thread and holds the GIL for tens of milliseconds,
        #: so one tenant's six drains on threads were six shares of the process's CPU
        #: against every other tenant's requests.
        #: (Per event loop: a backend may be driven by one loop after another.)
        self._extracting: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None

    def start(self) -> None:
        """On a store's first call: resume, in the background, every unit left ``pending``
        in any of its workspaces (a crash, or a background process stopped mid-queue)."""
        if self._started:
            return
        self._started = True
        if not self.queues_messages or not self.lanes.claim_resume():
            return
        self._resuming = asyncio.get_running_loop().create_task(self._resume_store())

    async def _resume_store(self) -> None:
        try:
            for workspace in await self.lanes.run(q.workspaces_with_pending):
                await self.lanes.resume_workspace(workspace)
        except Exception as error:  # the work stays pending for the next open
            log.warning("resuming pending extraction failed: %r", error)

    @property
    def queues_messages(self) -> bool:
        """Whether stored messages get a ``pending`` unit (extraction is on)."""
        return self.config.mode != "off" and self.config.extractor is not None

    @property
    def active(self) -> bool:
        return self.config.mode != "off" and (
            self.config.extractor is not None or self.config.summariser is not None
        )

    async def after_write(
        self, conversation_id: str, message_ids: Sequence[str], start: q.Start | None = None
    ) -> None:
        """Called after messages were stored: extract (and summarise) now or later.
        ``start`` is what ``extraction.store_messages`` read while storing them."""
        if not self.active:
            return
        self._queue(conversation_id)

    async def settled(self) -> None:
        """Sync mode's promise (see the module docstring): wait until the extraction this
        backend queued for earlier writes is written. Immediate when nothing is queued,
        and in the other modes."""
        if self.config.mode == "sync" and self._jobs:
            await self._local_jobs(None)

    @property
    def _writes(self) -> RunUnit:
        """Where the extraction's units of work run: at background priority when nobody
        waits for them (background mode), else as request units."""
        return self.lanes.background if self.config.mode == "background" else self.lanes.run

    def _queue(self, conversation_id: str) -> None:
        """Have the conversation's pending messages extracted. One drain task per
        conversation takes them oldest first, ``EXTRACTION_BATCH`` per unit of work;
        messages written while it runs are picked up by its next batch, so a burst of
        writes costs a few batched units of work, not several units per message."""
        self._dirty.add(conversation_id)
        if conversation_id not in self._jobs:
            task = asyncio.get_running_loop().create_task(self._drain(conversation_id))
            self._jobs[conversation_id] = task

    async def resume(self) -> int:
        """Queue (or, in sync mode, run) every unit still ``pending`` in the workspace —
        work a process stopped before finishing. Returns how many conversations it found."""
        if not self.queues_messages:
            return 0
        found = await self.lanes.run(q.conversations_with_pending)
        for conversation_id in found:
            if self.config.mode == "sync":
                while await self._process(conversation_id, None):
                    pass
            else:
                self._queue(conversation_id)
        return len(found)

    async def _drain(self, conversation_id: str) -> None:
        try:
            while conversation_id in self._dirty:
                self._dirty.discard(conversation_id)
                if await self._process(conversation_id, None):
                    self._dirty.add(conversation_id)  # a full batch: there may be more
        finally:
            # Synchronously, before the task ends: a write queued from here on starts a
            # new drain instead of counting on this one.
            if self._jobs.get(conversation_id) is asyncio.current_task():
                del self._jobs[conversation_id]

    async def wait(self, conversation_id: str | None = None) -> None:
        """Until the queued work of ``conversation_id`` (default: every conversation of the
        workspace) is done: this process's jobs, then units still ``pending`` in the
        database (left by a crash, or queued by another process), which it extracts
        itself once and otherwise watches for at most ``WAIT_SECONDS``."""
        self.start()
        await self._resumed()
        await self._local_jobs(conversation_id)
        if not self.queues_messages:
            return
        if not await self.lanes.read(q.pending_count, conversation_id):
            return
        found = (
            [conversation_id]
            if conversation_id is not None
            else await self.lanes.run(q.conversations_with_pending)
        )
        for cid in found:
            self._queue(cid)
        await self._local_jobs(conversation_id)
        deadline = asyncio.get_running_loop().time() + WAIT_SECONDS
        while await self.lanes.read(q.pending_count, conversation_id):
            if asyncio.get_running_loop().time() >= deadline:
                log.warning("extraction still pending after %.0f s", WAIT_SECONDS)
                return
            await asyncio.sleep(_POLL_SECONDS)

    async def _resumed(self) -> None:
        """Until the store-wide resume started on this event loop is done."""
        task = self._resuming
        if task is not None and task.get_loop() is asyncio.get_running_loop():
            await asyncio.gather(task, return_exceptions=True)

    async def _local_jobs(self, conversation_id: str | None) -> None:
        """Until this pipeline's drain tasks (of one conversation, or all) are done.

        A drain runs on the event loop of the write that queued it; a sync facade or a
        script may call from another loop. A drain on a loop that still runs is waited
        for through a thread-safe future; one stranded on a loop that stopped (its task
        never finishes) is replaced by a drain on this loop — its units are still
        ``pending`` in the database, so nothing is lost or done twice."""
        loop = asyncio.get_running_loop()
        while True:
            jobs = [
                (cid, task)
                for cid, task in list(self._jobs.items())
                if conversation_id is None or cid == conversation_id
            ]
            if not jobs:
                return
            waits: list[Awaitable[object]] = []
            for cid, task in jobs:
                home = task.get_loop()
                if home is loop:
                    waits.append(task)
                elif task.done() or home.is_closed() or not home.is_running():
                    if self._jobs.get(cid) is task:
                        del self._jobs[cid]
                    self._queue(cid)
                else:
                    waits.append(asyncio.wrap_future(_watch(task)))
            await asyncio.gather(*waits, return_exceptions=True)

    async def aclose(self) -> None:
        """Finish queued work (so a closed store never holds half-written extraction)."""
        await self._resumed()
        await self._local_jobs(None)

    # -- the work --------------------------------------------------------------------
    async def _process(
        self, conversation_id: str, ids: list[str] | None, start: q.Start | None = None
    ) -> bool:
        """Extract (and summarise) the pending messages (``ids`` narrows them; ``None``:
        the oldest ``EXTRACTION_BATCH``). Returns whether more may be pending."""
        more = False
        try:
            due = None
            if self.queues_messages:
                due, more = await self._extract(conversation_id, ids, start)
            if self.config.summariser is not None:
                await self._summarise(conversation_id, due)
        except Exception as error:  # never fail the write that triggered us
            log.warning("extraction for conversation %s failed: %r", conversation_id, error)
        return more

    async def _extract(
        self, conversation_id: str, ids: list[str] | None, start: q.Start | None
    ) -> tuple[list[list[sm.PendingMessage]] | None, bool]:
        """Extract and write; returns the observations now due (``None``: not looked up)
        and whether a whole batch was taken (more may be pending)."""
        if start is None:
            limit = EXTRACTION_BATCH if ids is None else None
            start = await self._writes(q.pending_messages, conversation_id, ids, limit)
        user_id, known, pending = start
        if not pending:
            return None, False
        if isinstance(self.config.extractor, RuleExtractor):
            async with self._extraction_lock():
                results = await self._extract_each(pending, known)
        else:  # a model extractor waits on I/O: its batches may overlap
            results = await self._extract_each(pending, known)
        vectors = await self._entity_vectors(results)
        every = self.config.observation_every if self.config.summariser is not None else None
        full = ids is None and len(pending) >= EXTRACTION_BATCH
        # The batch is written in units of at most ``APPLY_FACTS`` facts: the writer is
        # shared by every workspace, and a unit is what another's write may wait behind.
        # Each message's extraction is still written whole, with its unit's status.
        *first, last = apply_chunks(results)
        for chunk in first:
            await self._writes(
                g.apply_extractions, user_id, chunk, vectors, self.config.skip_entity
            )
        due = await self._writes(
            g.apply_then_due,
            conversation_id,
            user_id,
            last,
            vectors,
            self.config.skip_entity,
            every,
        )
        return due, full

    def _extraction_lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._extracting is None or self._extracting[0] is not loop:
            self._extracting = (loop, asyncio.Lock())
        return self._extracting[1]

    async def _extract_each(
        self, pending: Sequence[sm.PendingMessage], known: str | None
    ) -> list[g.MessageExtraction]:
        """Run the extractor over each pending message, in order (a message's failure is
        its own: it is recorded, the rest go on)."""
        extractor = self.config.extractor
        assert extractor is not None
        results: list[g.MessageExtraction] = []
        recent: list[str] = []
        for message in pending:
            try:
                found: Extraction | None = await extractor.extract(
                    ExtractionInput(
                        text=message.content,
                        role=message.role,
                        user_name=known,
                        recent=tuple(recent[-RECENT_CONTEXT:]),
                    )
                )
                error = None
            except Exception as failure:
                log.warning("extracting message %s failed: %r", message.id, failure)
                found, error = None, f"{type(failure).__name__}: {failure}"
            results.append(g.MessageExtraction(message, found, error))
            recent.append(message.content)
            if found is not None and found.user_name:
                known = known or found.user_name
        return results

    async def _entity_vectors(
        self, results: Sequence[g.MessageExtraction]
    ) -> dict[tuple[str, str], Vectors]:
        """Vectors for the extracted entities that will be new: one embedding batch."""
        wanted: dict[tuple[str, str], str] = {}
        for result in results:
            if result.extraction is not None and result.extraction.user_name:
                wanted.setdefault((result.extraction.user_name, "person"), USER_DESCRIPTION)
            for entity in result.extraction.entities if result.extraction else ():
                wanted.setdefault((entity.name, entity.type), entity.description)
        if not wanted or not self.lanes.has_vectors:
            return {}
        new = await self._writes(g.new_entity_names, list(wanted))
        if not new:
            return {}
        embedded = await self.lanes.embed(
            [entity_text(name, wanted[(name, type_)] or None) for name, type_ in new]
        )
        if embedded is None:
            return {}
        return {key: embedded[i : i + 1] for i, key in enumerate(new)}

    async def _summarise(
        self, conversation_id: str, due: list[list[sm.PendingMessage]] | None = None
    ) -> None:
        summariser = self.config.summariser
        assert summariser is not None
        run = self._writes
        batches = due
        if batches is None:
            batches = await run(sm.due_observations, conversation_id, self.config.observation_every)
        if not batches:
            return
        written = [
            (await summariser.observe([(msg.role, msg.content) for msg in batch]), batch)
            for batch in batches
        ]
        await run(sm.add_observations, conversation_id, written)
        while True:
            reflection = await run(sm.due_reflection, conversation_id, self.config.reflection_every)
            if reflection is None:
                return
            content = await summariser.reflect(reflection.observations, reflection.previous)
            await run(sm.add_reflection, conversation_id, content, reflection)


def apply_chunks(
    results: Sequence[g.MessageExtraction], budget: int = APPLY_FACTS
) -> list[list[g.MessageExtraction]]:
    """``results`` in order, cut into runs of at most ``budget`` facts (a message counts
    one, plus its entities and relationships); never empty, never a message split."""
    chunks: list[list[g.MessageExtraction]] = [[]]
    spent = 0
    for result in results:
        found = result.extraction
        cost = 1 + (len(found.entities) + len(found.relationships) if found else 0)
        if chunks[-1] and spent + cost > budget:
            chunks.append([])
            spent = 0
        chunks[-1].append(result)
        spent += cost
    return chunks
