"""Model-driven extraction and summaries for the local engine, over any ``ChatModel``.

:class:`LLMExtractor` is the engine's extractor when a model is configured: one
structured-output call per chat message with the provider's JSON schema (§6.1), parsed
strictly — a reply that is not the schema's shape raises, and the engine's pipeline marks
that message's extraction ``failed`` instead of storing guesses. :class:`LLMSummariser`
writes observation and reflection prose where the offline summariser keeps sentences.

Both are plain adapters: no retries, no fallbacks. The pipeline decides what a failure
means; the meta-entity guard (§6.4) is applied by the pipeline to every extractor alike.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..extraction.labels import ended_label
from ..extraction.rules import extract_sync
from ..extraction.schema import (
    MEMORY_EXTRACTION_PROMPT,
    ExtractionOutput,
    parse_extraction_output,
    response_format,
)
from ..extraction.types import (
    ENTITY_TYPES,
    SELF,
    ExtractedEntity,
    ExtractedRelationship,
    Extraction,
    ExtractionInput,
)
from .chat import ChatMessage, ChatModel

__all__ = [
    "CHAT_EXTRACTION_PROMPT",
    "OBSERVATION_PROMPT",
    "REFLECTION_PROMPT",
    "LLMExtractor",
    "LLMSummariser",
    "normalise_entity_type",
]

#: §6.1's instruction, plus what a chat message needs: who "I" and "you" are.
CHAT_EXTRACTION_PROMPT = (
    f"{MEMORY_EXTRACTION_PROMPT} The memory is one chat message. Call the human user "
    '"User" in relationships: "I", "me" and "my" in a user message, and "you" and "your" '
    "in an assistant message, are the User; the assistant is never an entity. Use entity "
    "types person, organization, location, tool, event, concept or preference, and "
    "relationship labels in UPPER_SNAKE_CASE such as WORKS_AT, LIVES_IN, USES, PREFERS."
)

OBSERVATION_PROMPT = (
    "Summarise the chat excerpt below as one observation for the user's long-term memory: "
    "the facts the user stated about themselves, their plans and preferences, and the "
    "people, places, organisations and tools they named. Write in the third person "
    '("The user ..."), at most four sentences, plain text. Do not mention memory, '
    "remembering, the assistant or this summary."
)

REFLECTION_PROMPT = (
    "Merge the previous reflection and the new observations below into one updated "
    "reflection about the user: a short paragraph of the durable facts, newest facts "
    "winning where they conflict. Plain text, third person, no mention of memory or of "
    "this summary."
)

#: Names a model may use for the user; they become :data:`SELF`, not entities.
_USER_NAMES = frozenset(
    {"user", "the user", "i", "me", "myself", "you", "the human", "human", "speaker", SELF}
)

_TYPE_SYNONYMS: dict[str, str] = {
    "place": "location",
    "city": "location",
    "country": "location",
    "region": "location",
    "org": "organization",
    "organisation": "organization",
    "company": "organization",
    "institution": "organization",
    "people": "person",
    "human": "person",
    "technology": "tool",
    "software": "tool",
    "product": "tool",
    "language": "tool",
    "framework": "tool",
    "topic": "concept",
    "skill": "concept",
}
_NOT_LABEL = re.compile(r"[^0-9A-Za-z]+")


def normalise_entity_type(kind: str) -> str:
    """A model's entity type in the engine's vocabulary (``"Place"`` → ``"location"``);
    anything unknown is a ``concept``."""
    key = kind.strip().lower()
    key = _TYPE_SYNONYMS.get(key, key)
    return key if key in ENTITY_TYPES else "concept"


def _label(kind: str) -> str:
    """``"works at"`` → ``"WORKS_AT"``."""
    return _NOT_LABEL.sub("_", kind.strip()).strip("_").upper()


class LLMExtractor:
    """An :class:`~nams_local.extraction.Extractor` backed by a chat model.

    Args:
        model: any :class:`~nams_local.integrations.ChatModel`; it must honour an OpenAI
            ``response_format`` of type ``json_schema`` (or at least answer with the JSON).
        prompt: the system instruction; default :data:`CHAT_EXTRACTION_PROMPT`.

    The schema has no field for the user's own name, so ``Extraction.user_name`` comes
    from the rule-based extractor's "my name is …" patterns, which are cheap and exact.
    """

    def __init__(self, model: ChatModel, *, prompt: str | None = None) -> None:
        self.model = model
        self.prompt = prompt if prompt is not None else CHAT_EXTRACTION_PROMPT

    def request(self, message: ExtractionInput) -> list[ChatMessage]:
        """The chat messages sent for ``message`` (public so callers can log or test it)."""
        lines: list[str] = []
        if message.user_name:
            lines.append(f'The User\'s name is "{message.user_name}".')
        if message.recent:
            lines.append("Earlier messages, for context only:")
            lines.extend(f"- {text}" for text in message.recent)
            lines.append("")
        lines.append(f"Memory (chat message from the {message.role}): {message.text}")
        return [
            {"role": "system", "content": self.prompt},
            {"role": "user", "content": "\n".join(lines)},
        ]

    async def extract(self, message: ExtractionInput) -> Extraction:
        """One model call; raises ``ValueError`` when the reply is not the schema's shape."""
        response = await self.model.generate(
            self.request(message), response_format=response_format()
        )
        output = parse_extraction_output(response.text)
        stated = extract_sync(message).user_name
        return _to_extraction(output, message.user_name, stated)


def _to_extraction(output: ExtractionOutput, known: str | None, stated: str | None) -> Extraction:
    users = set(_USER_NAMES) | {n.casefold() for n in (known, stated) if n}
    entities: dict[str, ExtractedEntity] = {}
    for item in output.entities:
        name = " ".join(item.name.split())
        key = name.casefold()
        if not name or key in _USER_NAMES or key in entities:
            continue
        confidence = 1.0 if item.confidence is None else min(max(item.confidence, 0.0), 1.0)
        kind = "person" if key in users else normalise_entity_type(item.type)
        entities[key] = ExtractedEntity(name, kind, item.description.strip(), confidence)

    def endpoint(name: str) -> str | None:
        key = " ".join(name.split()).casefold()
        if key in users:
            return SELF
        found = entities.get(key)
        return found.name if found is not None else None

    relationships: dict[tuple[str, str, str], ExtractedRelationship] = {}
    for rel in output.relationships:
        source, target, label = endpoint(rel.source), endpoint(rel.target), _label(rel.type)
        if source is None or target is None or not label or source == target:
            continue  # the schema says endpoints must be entities above; others are noise
        # "FORMERLY_WORKED_AT", or ``"ended": true``: the engine closes the edge.
        label, ended = ended_label(label)
        relationships.setdefault(
            (source, label, target),
            ExtractedRelationship(
                source, target, label, ended=ended or rel.ended, when=rel.when or None
            ),
        )
    return Extraction(tuple(entities.values()), tuple(relationships.values()), stated)


class LLMSummariser:
    """A :class:`~nams_local.extraction.Summariser` that asks a chat model for prose.

    Raises ``ValueError`` when the model answers with no text; model errors propagate.
    """

    def __init__(
        self,
        model: ChatModel,
        *,
        observation_prompt: str | None = None,
        reflection_prompt: str | None = None,
    ) -> None:
        self.model = model
        self.observation_prompt = observation_prompt or OBSERVATION_PROMPT
        self.reflection_prompt = reflection_prompt or REFLECTION_PROMPT

    async def observe(self, messages: Sequence[tuple[str, str]]) -> str:
        excerpt = "\n".join(f"{role.capitalize()}: {text}" for role, text in messages)
        return await self._ask(self.observation_prompt, excerpt)

    async def reflect(self, observations: Sequence[str], previous: str | None) -> str:
        parts = [f"Previous reflection: {previous or '(none yet)'}", "", "New observations:"]
        parts.extend(f"- {text}" for text in observations)
        return await self._ask(self.reflection_prompt, "\n".join(parts))

    async def _ask(self, instruction: str, content: str) -> str:
        response = await self.model.generate(
            [{"role": "system", "content": instruction}, {"role": "user", "content": content}]
        )
        text = (response.text or "").strip()
        if not text:
            raise ValueError("the model returned no summary text")
        return text
