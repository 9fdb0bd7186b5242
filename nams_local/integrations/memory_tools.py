"""The two memory tools' contract: names, descriptions, argument models, result shapes.

Everything here is observable by the model or the app, so it is the TS provider's text
and shape exactly (provider-behavior §5.1–§5.2). The pydantic models validate the
arguments a model sends and generate the JSON schemas the model is shown; the schema
generator drops pydantic's titles and adds ``$schema`` so the result equals the schema
the AI SDK sends for the provider's zod definitions.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode, JsonSchemaValue
from pydantic_core import CoreSchema

from .memory_store import MemoryType

__all__ = [
    "QUERY_MEMORY",
    "QUERY_MEMORY_DESCRIPTION",
    "STORE_MEMORY",
    "STORE_MEMORY_DESCRIPTION",
    "QueryMemoryArgs",
    "StoreMemoryArgs",
    "js_number",
    "tool_schema",
]

QUERY_MEMORY = "query_memory"
STORE_MEMORY = "store_memory"

QUERY_MEMORY_DESCRIPTION = (
    "Search NAMS (Neo4j Agent Memory System) for context relevant to the current message. "
    'Call this before answering, every turn. A result whose source is "graph" is a stored '
    "relationship, written (subject)-[RELATIONSHIP]->(object)."
)
STORE_MEMORY_DESCRIPTION = (
    "Persist important information to NAMS (Neo4j graph). Call this BEFORE giving your final "
    "answer whenever the conversation contains facts, preferences, or patterns worth "
    "remembering. Store only NEW information the user supplied in this conversation. Never "
    "store what query_memory returned, or a summary of what you remember — that is already "
    "stored, and re-storing it degrades recall."
)

#: ``preview`` in ``store_memory``'s answer is the content cut to this many characters.
PREVIEW_LENGTH = 80

_STRICT = ConfigDict(extra="forbid", strict=True)


def _integral(value: Any) -> Any:
    """``5.0`` as ``5``: JSON has one number type, so zod's ``int()`` accepts ``5.0`` and a
    model may send it; strict mode still refuses ``5.5``, ``"5"`` and ``true``."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


class QueryMemoryArgs(BaseModel):
    """Arguments of ``query_memory``."""

    model_config = _STRICT

    query: str = Field(description="Keywords or phrase to search in memory")
    limit: Annotated[int, BeforeValidator(_integral)] = Field(default=5, ge=1, le=20)


class StoreMemoryArgs(BaseModel):
    """Arguments of ``store_memory``."""

    model_config = _STRICT

    content: str = Field(min_length=1, max_length=2000, description="The information to remember")
    type: MemoryType = Field(
        description=(
            "fact=persistent knowledge | interaction=conversation event | "
            "pattern=recurring behaviour | user_preference=explicit setting"
        )
    )
    confidence: float = Field(
        default=0.7,
        ge=0,
        le=1,
        description=(
            "Confidence 0–1: 0.8–1.0 very high · 0.6–0.8 high · 0.3–0.6 medium · 0–0.3 low"
        ),
    )
    tags: list[Annotated[str, StringConstraints(max_length=40)]] = Field(
        default_factory=list, max_length=10
    )


class _Draft07(GenerateJsonSchema):
    """pydantic's schema, minus titles, plus the draft-07 ``$schema`` the AI SDK sends."""

    def generate(self, schema: CoreSchema, mode: JsonSchemaMode = "validation") -> JsonSchemaValue:
        generated = _untitled(super().generate(schema, mode))
        generated.pop("description", None)  # the class docstring is for Python readers
        return {"$schema": "http://json-schema.org/draft-07/schema#", **generated}

    def default_schema(self, schema: Any) -> JsonSchemaValue:
        value: JsonSchemaValue = super().default_schema(schema)
        if schema.get("default_factory") is list:
            value["default"] = []
        return value


def _untitled(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _untitled(v) for k, v in value.items() if k != "title"}
    if isinstance(value, list):
        return [_untitled(v) for v in value]
    return value


def tool_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema a model is shown for ``model``'s arguments."""
    return model.model_json_schema(schema_generator=_Draft07)


def js_number(value: float) -> str:
    """``value`` as JavaScript prints a number: ``0.7``, ``1``, ``0.85``, ``1e-7``."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    exact = Decimal(repr(abs(float(value)))).normalize()
    _, digit_tuple, exponent = exact.as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    k, n = len(digits), exponent + len(digits)
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = f"{digits[:n]}.{digits[n:]}"
    elif -6 < n <= 0:
        text = f"0.{'0' * -n}{digits}"
    else:
        mantissa = digits if k == 1 else f"{digits[0]}.{digits[1:]}"
        text = f"{mantissa}e{'+' if n - 1 >= 0 else '-'}{abs(n - 1)}"
    return sign + text
