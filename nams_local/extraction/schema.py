"""The structured-output contract of model-driven extraction (provider-behavior §6.1).

Both model-driven paths use it: graph extraction in tools mode (one call per stored
memory, with :data:`MEMORY_EXTRACTION_PROMPT` verbatim) and the engine's LLM extractor
(one call per chat message). The JSON schema is the provider's, byte for byte in meaning;
:class:`ExtractionOutput` validates a model's answer against the same shape.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "EXTRACTION_SCHEMA",
    "MEMORY_EXTRACTION_PROMPT",
    "ExtractionOutput",
    "OutputEntity",
    "OutputRelationship",
    "memory_extraction_prompt",
    "parse_extraction_output",
    "response_format",
]

#: The instruction of §6.1, exact.
MEMORY_EXTRACTION_PROMPT = (
    "Extract entities and the relationships between them from the memory below. Be "
    "conservative: only real, named entities; skip filler. Do not extract entities about "
    "memory, recall, or stored profiles — only the subjects they refer to."
)

#: The output schema of §6.1, exact.
EXTRACTION_SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {
        "entities": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {
                        "type": "string",
                        "description": 'Canonical entity name, e.g. "Alex", "Neovim", "TechCorp"',
                    },
                    "type": {
                        "type": "string",
                        "description": (
                            "person | organization | tool | place | concept | preference | event"
                        ),
                    },
                    "description": {
                        "type": "string",
                        "description": (
                            'Short description of the entity, or "" if the memory does not '
                            "state one"
                        ),
                    },
                },
                "required": ["name", "type", "description"],
                "additionalProperties": False,
            },
            "description": "Distinct, real, named entities only. Do not invent.",
        },
        "relationships": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "from": {
                        "type": "string",
                        "description": "Source entity name (must match an entity above)",
                    },
                    "to": {
                        "type": "string",
                        "description": "Target entity name (must match an entity above)",
                    },
                    "type": {
                        "type": "string",
                        "description": (
                            "Relationship label, e.g. PREFERS, WORKS_AT, USES, LOCATED_IN"
                        ),
                    },
                },
                "required": ["from", "to", "type"],
                "additionalProperties": False,
            },
            "description": "Relationships between the entities above, or [] if none are stated",
        },
    },
    "required": ["entities", "relationships"],
    "additionalProperties": False,
}


def memory_extraction_prompt(memory_type: str, content: str) -> str:
    """The full prompt of one tools-mode extraction call: instruction, blank line, memory."""
    return f"{MEMORY_EXTRACTION_PROMPT}\n\nMemory ({memory_type}): {content}"


def response_format(name: str = "extraction") -> dict[str, Any]:
    """The OpenAI ``response_format`` that asks a chat model for this schema."""
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "schema": EXTRACTION_SCHEMA, "strict": True},
    }


class OutputEntity(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    type: str
    description: str
    #: Not in the schema; a model may add it, and §6.2 then sends it as feedback.
    confidence: float | None = None


class OutputRelationship(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    source: str = Field(alias="from")
    target: str = Field(alias="to")
    type: str
    #: Not in the schema; a model may add them: the fact no longer holds, and the date
    #: phrase it gives ("in May", "2021-03"), resolved by the engine like the rule
    #: extractor's (``ExtractedRelationship.ended`` / ``when``).
    ended: bool = False
    when: str | None = Field(default=None, max_length=80)


class ExtractionOutput(BaseModel):
    """A model's structured answer, validated."""

    model_config = ConfigDict(extra="forbid")

    entities: list[OutputEntity]
    relationships: list[OutputRelationship]


def parse_extraction_output(text: str | None) -> ExtractionOutput:
    """Parse a model's JSON answer (tolerating a Markdown code fence around it).

    Raises ``ValueError`` (pydantic's ``ValidationError`` is one) when the text is not
    the schema's shape, so callers can take their failure path.
    """
    if text is None:
        raise ValueError("the model returned no text")
    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
        body = body.rsplit("```", 1)[0]
    return ExtractionOutput.model_validate(json.loads(body))
