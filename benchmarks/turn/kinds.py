"""What a measured turn is: the kinds of turn, their labels and the memory sources.

Shared by the measurement, the HTTP targets and the report, so a kind or a source is
named in one place and the table, the JSON and the options cannot disagree about them.
"""

from __future__ import annotations

from typing import Literal

NAME = "turn"
#: ``MemoryConfig.max_memories``: how many memories the middleware asks for per turn.
TURN_LIMIT = 6
SOURCES = ("long-term", "graph", "conversation", "cross-session", "reasoning", "turn")
#: ``SupportsTurns``' methods: hidden from the series that measure the provider's path.
TURN_METHODS = frozenset({"recall_turn", "persist_turn"})
METHOD_ORDER = (
    "recall_turn",
    "search_entities",
    "get_entity",
    "search_messages",
    "list_steps",
    "search_user_messages",
    "list_conversations",
)
TurnKind = Literal[
    "native", "per-source", "per-conversation", "pre-embedded", "solo", "loopback", "hosted"
]
SERIES_LABELS: dict[str, str] = {
    "native": "in-process (one recall_turn call)",
    "per-source": "in-process, source by source (recall_turn hidden)",
    "per-conversation": "in-process, user_message_search hidden",
    "pre-embedded": "in-process, query embedded first (diag.)",
    "loopback": "HostedBackend -> nams-local serve (loopback)",
    "hosted": "HostedBackend -> hosted NAMS",
}
#: Series that talk HTTP, and the ``--backends`` names.
HTTP_KINDS = ("loopback", "hosted")
BACKENDS = ("in-process", "loopback", "hosted")
