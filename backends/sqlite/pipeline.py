"""The extraction pipeline: messages in, entities, relationships and summaries out.

Hosted NAMS extracts every persisted user/assistant message into its entity graph in the
background and summarises conversations into observations and reflections. This is the
same, locally, with a pluggable :class:`~nams_local.extraction.Extractor` (default: the
offline :class:`~nams_local.extraction.RuleExtractor`) and
:class:`~nams_local.extraction.Summariser` (default: the offline extractive one).

Modes:

- ``"sync"`` (default; what tests and a CI fake want): ``add_message`` returns after its
  extraction and any due summary are written, so the next read sees them.
- ``"background"``: ``add_message`` returns at once; a task per conversation works through
  the queue in order; ``wait_for_extraction(conversation_id)`` waits for it.
- ``"off"``: nothing is extracted or summarised (messages report status ``skipped``).

Nothing here can fail a write: an extractor that raises marks its message's unit
``failed`` (with the error) and logs a warning; a failing summariser logs a warning.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from nams_local.extraction import (
    USER_DESCRIPTION,
    Extraction,
    ExtractionInput,
    Extractor,
    SkipEntity,
    Summariser,
)

from . import extraction as x
from .store import entity_text
from .vectors import Vectors

if TYPE_CHECKING:
    from .backend import SQLiteBackend

__all__ = ["DEFAULT_OBSERVATION_EVERY", "DEFAULT_REFLECTION_EVERY", "ExtractionMode", "Pipeline"]

log = logging.getLogger("nams_local.extraction")

ExtractionMode = Literal["sync", "background", "off"]

#: An observation summarises this many messages; a reflection this many observations.
DEFAULT_OBSERVATION_EVERY = 10
DEFAULT_REFLECTION_EVERY = 3
#: Preceding messages handed to the extractor as context.
RECENT_CONTEXT = 4


@dataclass(frozen=True, slots=True)
class PipelineConfig:
    extractor: Extractor | None
    summariser: Summariser | None
    mode: ExtractionMode
    skip_entity: SkipEntity | None
    observation_every: int
    reflection_every: int


class Pipeline:
    """Runs extraction and summaries for one backend (see the module docstring)."""

    def __init__(self, backend: SQLiteBackend, config: PipelineConfig) -> None:
        self.backend = backend
        self.config = config
        #: The newest queued job of each conversation (background mode).
        self._jobs: dict[str, asyncio.Task[None]] = {}

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
        self, conversation_id: str, message_ids: Sequence[str], start: x.Start | None = None
    ) -> None:
        """Called after messages were stored: extract (and summarise) now or later.
        ``start`` is what ``extraction.store_messages`` read while storing them."""
        if not self.active:
            return
        if self.config.mode == "sync":
            await self._process(conversation_id, list(message_ids), start)
            return
        self._queue(conversation_id, list(message_ids))

    def _queue(self, conversation_id: str, ids: list[str] | None) -> None:
        previous = self._jobs.get(conversation_id)
        task = asyncio.get_running_loop().create_task(self._after(previous, conversation_id, ids))
        self._jobs[conversation_id] = task
        task.add_done_callback(lambda t: self._forget(conversation_id, t))

    async def resume(self) -> int:
        """Queue (or, in sync mode, run) every unit still ``pending`` in the workspace —
        work a process stopped before finishing. Returns how many conversations it found."""
        if not self.queues_messages:
            return 0
        found = await self.backend._run(x.conversations_with_pending)
        for conversation_id in found:
            if self.config.mode == "sync":
                await self._process(conversation_id, None)
            else:
                self._queue(conversation_id, None)
        return len(found)

    def _forget(self, conversation_id: str, task: asyncio.Task[None]) -> None:
        if self._jobs.get(conversation_id) is task:
            del self._jobs[conversation_id]

    async def _after(
        self, previous: asyncio.Task[None] | None, conversation_id: str, ids: list[str] | None
    ) -> None:
        if previous is not None:
            await asyncio.gather(previous, return_exceptions=True)
        await self._process(conversation_id, ids)

    async def wait(self, conversation_id: str | None = None) -> None:
        """Until the queued work of ``conversation_id`` (default: every conversation) is done."""
        while True:
            if conversation_id is None:
                tasks = list(self._jobs.values())
            else:
                task = self._jobs.get(conversation_id)
                tasks = [task] if task is not None else []
            if not tasks:
                return
            await asyncio.gather(*tasks, return_exceptions=True)

    async def aclose(self) -> None:
        """Finish queued work (so a closed store never holds half-written extraction)."""
        await self.wait()

    # -- the work --------------------------------------------------------------------
    async def _process(
        self, conversation_id: str, ids: list[str] | None, start: x.Start | None = None
    ) -> None:
        try:
            due = None
            if self.queues_messages:
                due = await self._extract(conversation_id, ids, start)
            if self.config.summariser is not None:
                await self._summarise(conversation_id, due)
        except Exception as error:  # never fail the write that triggered us
            log.warning("extraction for conversation %s failed: %r", conversation_id, error)

    async def _extract(
        self, conversation_id: str, ids: list[str] | None, start: x.Start | None
    ) -> list[list[x.PendingMessage]] | None:
        """Extract and write; returns the observations now due (``None``: not looked up)."""
        backend = self.backend
        extractor = self.config.extractor
        assert extractor is not None
        if start is None:
            start = await backend._run(x.pending_messages, conversation_id, ids)
        user_id, known, pending = start
        if not pending:
            return None
        results: list[x.MessageExtraction] = []
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
            results.append(x.MessageExtraction(message, found, error))
            recent.append(message.content)
            if found is not None and found.user_name:
                known = known or found.user_name
        vectors = await self._entity_vectors(results)
        every = self.config.observation_every if self.config.summariser is not None else None
        return await backend._run(
            x.apply_then_due,
            conversation_id,
            user_id,
            results,
            vectors,
            self.config.skip_entity,
            every,
        )

    async def _entity_vectors(
        self, results: Sequence[x.MessageExtraction]
    ) -> dict[tuple[str, str], Vectors]:
        """Vectors for the extracted entities that will be new: one embedding batch."""
        wanted: dict[tuple[str, str], str] = {}
        for result in results:
            if result.extraction is not None and result.extraction.user_name:
                wanted.setdefault((result.extraction.user_name, "person"), USER_DESCRIPTION)
            for entity in result.extraction.entities if result.extraction else ():
                wanted.setdefault((entity.name, entity.type), entity.description)
        if not wanted or self.backend.store.vectors is None:
            return {}
        new = await self.backend._run(x.new_entity_names, list(wanted))
        if not new:
            return {}
        embedded = await self.backend._embed(
            [entity_text(name, wanted[(name, type_)] or None) for name, type_ in new]
        )
        if embedded is None:
            return {}
        return {key: embedded[i : i + 1] for i, key in enumerate(new)}

    async def _summarise(
        self, conversation_id: str, due: list[list[x.PendingMessage]] | None = None
    ) -> None:
        backend = self.backend
        summariser = self.config.summariser
        assert summariser is not None
        batches = due
        if batches is None:
            batches = await backend._run(
                x.due_observations, conversation_id, self.config.observation_every
            )
        if not batches:
            return
        written = [
            (await summariser.observe([(msg.role, msg.content) for msg in batch]), batch)
            for batch in batches
        ]
        await backend._run(x.add_observations, conversation_id, written)
        while True:
            reflection = await backend._run(
                x.due_reflection, conversation_id, self.config.reflection_every
            )
            if reflection is None:
                return
            content = await summariser.reflect(reflection.observations, reflection.previous)
            await backend._run(x.add_reflection, conversation_id, content, reflection)
