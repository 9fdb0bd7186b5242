"""What an extractor yields, and the ``Extractor`` protocol every extractor implements.

An extractor reads one chat message and returns named entities and typed relationships
between them. It knows nothing about storage: the engine's pipeline resolves names to
entity ids, reuses existing entities and records mentions. A relationship whose endpoint
is the speaking user uses the placeholder name :data:`SELF`; the pipeline binds it to the
user's person entity (named once a message says "my name is ...").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

__all__ = [
    "ENTITY_TYPES",
    "SELF",
    "USER_DESCRIPTION",
    "ExtractedEntity",
    "ExtractedRelationship",
    "Extraction",
    "ExtractionInput",
    "Extractor",
]

#: Stands for the speaking user in :class:`ExtractedRelationship` endpoints.
SELF = "@user"

#: The description of the user's own person entity. "me" in it lets a question such as
#: "what do you remember about me?" find the user by text as well as by vector.
USER_DESCRIPTION = "the user (me)"

#: The entity types extractors emit: hosted NAMS's documented vocabulary (lower case)
#: plus ``event`` and ``preference``, which the provider's extraction schema also names.
ENTITY_TYPES: tuple[str, ...] = (
    "person",
    "organization",
    "location",
    "tool",
    "event",
    "concept",
    "preference",
)


@dataclass(frozen=True, slots=True)
class ExtractedEntity:
    """A named entity found in a message. ``type`` is one of :data:`ENTITY_TYPES`."""

    name: str
    type: str
    description: str = ""
    confidence: float = 1.0


@dataclass(frozen=True, slots=True)
class ExtractedRelationship:
    """A directed, typed edge between two extracted names (or :data:`SELF`).

    ``type`` is an upper-snake label such as ``WORKS_AT``, ``LIVES_IN``, ``USES``.
    ``ended``: the message says the fact no longer holds ("I no longer work at X", "I used
    to live in Y", "my ex-wife Z"): the engine closes the edge instead of opening one.
    ``when``: the date phrase the message gives for it, as written ("in May", "since
    2021", "last month"); the engine resolves it against the message's time
    (:func:`nams_local.extraction.dates.resolve_date`): when the fact started, or for an
    ``ended`` fact when it stopped.
    """

    source: str
    target: str
    type: str
    confidence: float = 1.0
    ended: bool = False
    when: str | None = None


@dataclass(frozen=True, slots=True)
class Extraction:
    """Everything found in one message.

    ``user_name`` is set when the message states the user's own name ("my name is
    Alex", "User is named Alex"); the user's person entity is then also in ``entities``.
    """

    entities: tuple[ExtractedEntity, ...] = ()
    relationships: tuple[ExtractedRelationship, ...] = ()
    user_name: str | None = None

    @property
    def empty(self) -> bool:
        return not self.entities and not self.relationships and self.user_name is None


@dataclass(frozen=True, slots=True)
class ExtractionInput:
    """One message to extract from, with what the pipeline already knows.

    ``user_name`` is the user's name if an earlier message stated it, so extractors may
    resolve "I" to it; ``recent`` holds a few preceding messages' text for extractors
    that use context (the default rule-based one does not need it).
    """

    text: str
    role: Literal["user", "assistant"] | str = "user"
    user_name: str | None = None
    recent: tuple[str, ...] = field(default_factory=tuple)


@runtime_checkable
class Extractor(Protocol):
    """Turns one message into entities and relationships. Must not raise on odd text:
    an extractor that fails raises, and the pipeline records the unit as ``failed``."""

    async def extract(self, message: ExtractionInput) -> Extraction: ...
