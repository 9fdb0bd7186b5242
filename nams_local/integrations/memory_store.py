"""Where a stored memory goes (provider-behavior §5.3), for one tool set.

``MemoryToolContext`` is what the TS provider calls the tool set's client: the backend,
the scope, the memoised conversation, the logger and the optional graph extractor. The
``store_memory`` tool and ``ensure_memory_stored`` both write through :meth:`store`, so
a memory the model stores and one the guarantee stores for it are routed the same way:

* ``interaction`` → a short-term assistant message in the conversation;
* ``fact`` / ``pattern`` / ``user_preference`` → graph extraction when configured, else (or
  when it fails or stores nothing) one entity named after the text, reused by exact name
  and type, with the confidence recorded as feedback and the tags as entity properties.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ..backend import MemoryBackend
from ..log import MemoryLogger
from ..persistence import ConversationResolver
from ..scope import Scope
from .entity_writes import upsert_entity
from .graph_extraction import GraphExtractor

__all__ = ["MemoryToolContext", "MemoryType", "flat_entity_name"]

MemoryType = Literal["fact", "interaction", "pattern", "user_preference"]

#: A flat entity's name is the memory text cut to this many characters (plus "…").
FLAT_NAME_LENGTH = 60
_SPACES = re.compile(r"\s+")


def flat_entity_name(content: str) -> str:
    """Whitespace runs collapsed, trimmed, cut to 60 characters plus ``…`` when longer."""
    name = _SPACES.sub(" ", content).strip()
    return name[:FLAT_NAME_LENGTH] + "…" if len(name) > FLAT_NAME_LENGTH else name


@dataclass(slots=True)
class MemoryToolContext:
    """One tool set's memory client. Its conversation is resolved once and reused."""

    backend: MemoryBackend
    scope: Scope
    resolver: ConversationResolver
    logger: MemoryLogger
    extractor: GraphExtractor | None = None

    async def conversation_id(self) -> str:
        return await self.resolver.resolve(self.scope)

    async def store(
        self,
        content: str,
        memory_type: str,
        confidence: float | None = None,
        tags: Sequence[str] = (),
    ) -> None:
        """Route one memory (§5.3). Write errors propagate; the callers turn them into
        their own failure shapes."""
        if memory_type == "interaction":
            await self.backend.add_message(await self.conversation_id(), "assistant", content)
            return
        if self.extractor is not None:
            try:
                if await self.extractor.extract(content, memory_type, confidence, tags):
                    return
            except Exception as exc:
                self.extractor.report_failure(exc)
        await upsert_entity(
            self.backend,
            self.logger,
            name=flat_entity_name(content),
            type=memory_type,
            description=content,
            confidence=confidence,
            tags=tags,
        )
