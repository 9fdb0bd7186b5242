"""Graph extraction in tools mode (provider-behavior §6).

With ``create_nams(..., extraction_model=model)``, a ``fact``/``pattern``/``user_preference``
memory is not stored as one flat entity named after its text: one structured-output call
(§6.1) names the real entities in it and the relationships between them, and those are
written — entities reused by exact name and type (§6.3), edges where the backend accepts
them (the local engine does; hosted NAMS does not and builds edges from saved turns).

Any failure falls back to the flat path so a memory is never lost to extraction. One
deliberate difference from the TS provider: an extraction that stores no entity at all (the
model found none, or the guard skipped them all) also takes the flat path, because
otherwise the memory would be stored nowhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..backend import MemoryBackend
from ..errors import NotSupportedError
from ..extraction import EntityCandidate, SkipEntity, is_meta_entity
from ..extraction.dates import resolve_date
from ..extraction.labels import ended_label
from ..extraction.schema import memory_extraction_prompt, parse_extraction_output, response_format
from ..log import MemoryLogger
from .chat import ChatModel
from .entity_writes import upsert_entity

__all__ = [
    "EXTRACTION_FAILED",
    "EXTRACTION_FAILED_FIRST",
    "RELATIONSHIP_WRITES_UNSUPPORTED",
    "ExtractionOptions",
    "GraphExtractor",
    "as_extraction_options",
    "extraction_ignored_message",
]

RELATIONSHIP_WRITES_UNSUPPORTED = (
    "this backend does not accept relationship writes — extracted entities are stored, "
    "edges are skipped. NAMS builds edges server-side from saved turns. Further "
    "occurrences are suppressed."
)
EXTRACTION_FAILED = "graph extraction failed, falling back to flat entity"
EXTRACTION_FAILED_FIRST = (
    f"{EXTRACTION_FAILED} — graph extraction is disabled for every memory until this is fixed"
)


def extraction_ignored_message(mode: str) -> str:
    """The warning for an extraction model given to a mode that does not use it (§6)."""
    return (
        f"extractionModel is ignored in {mode} mode — NAMS extracts persisted turns "
        "server-side. It applies to .tools()/.toolsWithMcp() only."
    )


@dataclass(frozen=True, slots=True)
class ExtractionOptions:
    """``skip_entity`` replaces the meta-entity guard (§6.4); True skips the candidate."""

    skip_entity: SkipEntity = is_meta_entity


def as_extraction_options(value: ExtractionOptions | Mapping[str, Any] | None) -> ExtractionOptions:
    """Accept ``ExtractionOptions`` or a dict such as ``{"skip_entity": fn}``."""
    if value is None:
        return ExtractionOptions()
    if isinstance(value, ExtractionOptions):
        return value
    unknown = set(value) - {"skip_entity"}
    if unknown:
        raise TypeError(f"unknown extraction option(s): {', '.join(sorted(unknown))}")
    skip = value.get("skip_entity")
    return ExtractionOptions() if skip is None else ExtractionOptions(skip_entity=skip)


class GraphExtractor:
    """One tool set's extractor, with that client's two one-shot log flags (§1.3)."""

    def __init__(
        self,
        model: ChatModel,
        backend: MemoryBackend,
        logger: MemoryLogger,
        options: ExtractionOptions | None = None,
    ) -> None:
        self.model = model
        self.backend = backend
        self.logger = logger
        self.options = options or ExtractionOptions()
        self._failed_before = False
        self._edges_unsupported = False

    async def extract(
        self,
        content: str,
        memory_type: str,
        confidence: float | None,
        tags: Sequence[str] = (),
    ) -> int:
        """Store the memory's entities and edges; returns how many entities were stored.

        Raises when the model call, its parsing or an entity write fails (the caller
        reports it and takes the flat path); relationship failures are only logged.
        """
        response = await self.model.generate(
            [{"role": "user", "content": memory_extraction_prompt(memory_type, content)}],
            response_format=response_format(),
        )
        output = parse_extraction_output(response.text)
        ids: dict[str, str] = {}
        for found in output.entities:
            candidate = EntityCandidate(found.name, found.type, found.description)
            if self.options.skip_entity(candidate):
                self.logger.warn(f'skipped self-referential entity "{found.name}" [{found.type}]')
                continue
            entity = await upsert_entity(
                self.backend,
                self.logger,
                name=found.name,
                type=found.type,
                description=found.description.strip() or content,
                confidence=found.confidence if found.confidence is not None else confidence,
                tags=tags,
            )
            if entity.id:
                ids[found.name] = entity.id
        for edge in output.relationships:
            source, target = ids.get(edge.source), ids.get(edge.target)
            if source and target:
                await self._add_relationship(source, target, edge.type, edge.ended, edge.when)
        return len(ids)

    async def _add_relationship(
        self, source: str, target: str, type: str, ended: bool, when: str | None
    ) -> None:
        # The backend's validity rules apply to these edges as to any other: a new home
        # closes the old one; a "FORMERLY_WORKED_AT" (or ``"ended": true``) edge closes the
        # edge it names, from the date the model gave or today.
        label, past = ended_label(type.strip().upper().replace(" ", "_"))
        today = datetime.now(UTC).date()
        stated = resolve_date(when, today) if when else None
        validity: dict[str, Any] = {}
        if past or ended:
            type = label
            validity["valid_until"] = stated or today.isoformat()
        elif stated is not None:
            validity["valid_from"] = stated
        try:
            await self.backend.add_relationship(source, target, type, **validity)
        except NotSupportedError:
            if not self._edges_unsupported:
                self._edges_unsupported = True
                self.logger.warn(RELATIONSHIP_WRITES_UNSUPPORTED)
        except Exception as exc:
            self.logger.warn("addRelationship failed", exc)

    def report_failure(self, error: BaseException) -> None:
        """Error level the first time for this client, warning afterwards (§6.5)."""
        if self._failed_before:
            self.logger.warn(EXTRACTION_FAILED, error)
        else:
            self._failed_before = True
            self.logger.error(EXTRACTION_FAILED_FIRST, error)
