"""Entity and relationship extraction: the protocol, the guard, and the extractors.

This package may import only ``nams_local.models`` (see ARCHITECTURE.md): the engine
imports it, so it must not import any backend, the server or the integrations.
"""

from .guard import EntityCandidate, SkipEntity, is_meta_entity, normalise_name, singular
from .rules import RuleExtractor
from .summarise import ExtractiveSummariser, Summariser
from .types import (
    ENTITY_TYPES,
    SELF,
    USER_DESCRIPTION,
    ExtractedEntity,
    ExtractedRelationship,
    Extraction,
    ExtractionInput,
    Extractor,
)

__all__ = [
    "ENTITY_TYPES",
    "SELF",
    "USER_DESCRIPTION",
    "EntityCandidate",
    "ExtractedEntity",
    "ExtractedRelationship",
    "Extraction",
    "ExtractionInput",
    "ExtractiveSummariser",
    "Extractor",
    "RuleExtractor",
    "SkipEntity",
    "Summariser",
    "is_meta_entity",
    "normalise_name",
    "singular",
]
