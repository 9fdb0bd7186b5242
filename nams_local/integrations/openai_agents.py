"""The OpenAI Agents SDK: ``NamsSession`` (the SDK's ``Session`` protocol on NAMS), the
memory tools as SDK function tools, and dynamic instructions that carry the memory block.

``NamsSession(session_id, backend, user_id=...)`` keeps a session's items in one NAMS
conversation of the user (found again by its ``agents_session_id`` metadata), one message
per item: the message's text is what search and retrieval read (a user or assistant
message's text; an audit line such as ``[tool-call] get_weather: {...}`` for other items,
marked with ``nams_kind`` like hooks mode's audit records), and the item itself, exactly
as the SDK gave it, rides in the message metadata (``agents_item``), so ``get_items``
returns the very shapes that were added. Hosted NAMS keeps no message metadata: there the
items come back rebuilt from role and text (tool calls, reasoning and content parts are
lost), which the session says once, as a warning, the first time it sees it.

The Runner calls ``add_items`` once per run with the run's input and new items, so each
turn is stored once. ``session.instructions(base)`` is an ``instructions`` callable that
recalls memories for the run's newest user message once per run (the SDK asks for
instructions on every model call) and appends the block; ``session.tools()`` gives
``query_memory`` and ``store_memory`` as ``FunctionTool`` objects. Importing this module
imports ``agents`` (the ``openai-agents`` extra).
"""

from __future__ import annotations

import asyncio
import json
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, cast

from agents import Agent, FunctionTool, RunContextWrapper, TResponseInputItem
from agents import Tool as AgentTool
from agents.memory import SessionSettings
from agents.tool_context import ToolContext

from ..backend import MAX_BULK_MESSAGES, MAX_LIST_LIMIT, MemoryBackend
from ..errors import NotSupportedError
from ..log import MemoryLogger
from ..models import Message, NewMessage
from .agent_runs import RunMemory, with_block
from .session_turns import AUDIT_MAX_CHARS, NAMS_KIND
from .tool import Tool, ToolSet

__all__ = ["ITEM_KEY", "SESSION_KEY", "NamsSession", "function_tools"]

#: Conversation metadata naming the SDK session it holds.
SESSION_KEY = "agents_session_id"
#: Message metadata holding the SDK item, as given.
ITEM_KEY = "agents_item"

METADATA_LOST = (
    "this backend does not keep message metadata: session items come back as plain "
    "role/content messages (tool calls, reasoning and content parts are lost)"
)

Instructions = Callable[[RunContextWrapper[Any], Agent[Any]], Awaitable[str]]


def _text(content: Any) -> str:
    """A message item's text: a string as is, text parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        parts = [p.get("text", "") for p in content if isinstance(p, Mapping) and "text" in p]
        return "".join(t for t in parts if isinstance(t, str))
    return ""


def _as_message(item: Mapping[str, Any]) -> NewMessage:
    """One SDK item as the message that stores it (its text searchable, itself kept)."""
    role = item.get("role")
    kind = item.get("type", "message")
    metadata: dict[str, Any] = {ITEM_KEY: dict(item)}
    if kind == "message" and role in ("user", "assistant", "system", "developer"):
        text = _text(item.get("content")).strip()
        if text:
            return NewMessage(
                role="system" if role == "developer" else str(role),
                content=text,
                metadata=metadata,
            )
    name = item.get("name") or kind
    payload = item.get("arguments", item.get("output", item.get("summary", item.get("content"))))
    body = payload if isinstance(payload, str) else json.dumps(payload, default=str)
    metadata[NAMS_KIND] = str(kind)
    content = f"[{kind}] {name}: {body}"[:AUDIT_MAX_CHARS]
    return NewMessage(role="assistant", content=content, metadata=metadata)


def _as_item(message: Message) -> TResponseInputItem:
    item = message.metadata.get(ITEM_KEY)
    if isinstance(item, dict):
        return cast(TResponseInputItem, item)
    return cast(TResponseInputItem, {"role": message.role, "content": message.content})


def _function_tool(tool: Tool) -> FunctionTool:
    async def invoke(context: ToolContext[Any], arguments: str) -> str:
        parsed = json.loads(arguments) if arguments.strip() else {}
        return json.dumps(await tool.run(parsed))

    return FunctionTool(
        name=tool.name,
        description=tool.description,
        params_json_schema=tool.parameters,
        on_invoke_tool=invoke,
        strict_json_schema=False,
    )


def function_tools(tools: ToolSet) -> list[AgentTool]:
    """A tool set (e.g. ``Nams.tools(scope)``) as Agents SDK function tools."""
    return [_function_tool(tool) for tool in tools.values()]


def _user_text(items: Sequence[Any]) -> str:
    for item in reversed(items):
        if isinstance(item, Mapping) and item.get("role") == "user":
            return _text(item.get("content")).strip()
    return ""


class NamsSession:
    """The Agents SDK ``Session`` protocol over a NAMS conversation (module docstring).

    Args:
        session_id: the SDK's session id (unique per user).
        backend: any ``MemoryBackend`` (the caller owns it).
        user_id: whose conversation it is (retrieval and the tools use it too).
        config: ``create_nams`` options for the memory block and the tools
            (``logger``, ``max_memories``, ...).
    """

    session_settings: SessionSettings | None = None

    def __init__(
        self, session_id: str, backend: MemoryBackend, *, user_id: str, **config: Any
    ) -> None:
        self.session_id = session_id
        self.backend = backend
        self.user_id = user_id
        self._config = config
        self._conversation: str | None = None
        self._lock = asyncio.Lock()
        self._warned = False
        self._memory: RunMemory | None = None
        self._blocks: dict[int, str] = {}

    @property
    def logger(self) -> MemoryLogger:
        return self.memory.config.logger

    @property
    def memory(self) -> RunMemory:
        """The session's ``RunMemory`` (before the conversation exists: the user's ladder)."""
        if self._memory is None or self._memory.scope.conversation_id != self._conversation:
            self._memory = RunMemory(
                self.backend,
                user_id=self.user_id,
                conversation_id=self._conversation,
                **self._config,
            )
        return self._memory

    # -- the conversation --------------------------------------------------------------
    async def _find(self) -> str | None:
        found = await self.backend.list_conversations(user_id=self.user_id, limit=MAX_LIST_LIMIT)
        for conversation in found:
            if conversation.metadata.get(SESSION_KEY) == self.session_id:
                return conversation.id
        return None

    async def _conversation_id(self, *, create: bool) -> str | None:
        async with self._lock:
            if self._conversation is None:
                self._conversation = await self._find()
            if self._conversation is None and create:
                created = await self.backend.create_conversation(
                    user_id=self.user_id, metadata={SESSION_KEY: self.session_id}
                )
                self._conversation = created.id
            return self._conversation

    def _check_kept(self, messages: Sequence[Message]) -> None:
        """Warn once if the backend dropped the items from the metadata (hosted NAMS)."""
        if not self._warned and any(ITEM_KEY not in m.metadata for m in messages):
            self._warned = True
            self.logger.warn(METADATA_LOST)

    # -- Session protocol ------------------------------------------------------------
    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The latest ``limit`` items (at most ``MAX_LIST_LIMIT``, the backend's window),
        oldest first."""
        conversation_id = await self._conversation_id(create=False)
        if conversation_id is None or limit == 0:
            return []
        window = MAX_LIST_LIMIT if limit is None else max(1, min(limit, MAX_LIST_LIMIT))
        messages = await self.backend.list_messages(conversation_id, limit=window)
        items = [_as_item(m) for m in reversed(messages)]
        self._check_kept(messages)
        return items

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        if not items:
            return
        conversation_id = await self._conversation_id(create=True)
        assert conversation_id is not None
        messages = [_as_message(cast(Mapping[str, Any], item)) for item in items]
        for start in range(0, len(messages), MAX_BULK_MESSAGES):
            chunk = messages[start : start + MAX_BULK_MESSAGES]
            self._check_kept(await self.backend.add_messages(conversation_id, chunk))

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove the newest item. NAMS has no per-message delete, so the conversation is
        rewritten without it (same user and session metadata, new message ids); refused
        for a session longer than the ``MAX_LIST_LIMIT`` window, which it would truncate."""
        conversation_id = await self._conversation_id(create=False)
        if conversation_id is None:
            return None
        conversation = await self.backend.get_conversation(conversation_id)
        if (conversation.message_count or 0) > MAX_LIST_LIMIT:
            raise NotSupportedError(
                f"pop_item on a session of more than {MAX_LIST_LIMIT} items is not supported"
            )
        messages = list(reversed(await self.backend.list_messages(conversation_id, MAX_LIST_LIMIT)))
        if not messages:
            return None
        kept = [
            NewMessage(role=m.role, content=m.content, metadata=m.metadata or None)
            for m in messages[:-1]
        ]
        async with self._lock:
            await self.backend.delete_conversation(conversation_id)
            self._conversation = None
            created = await self.backend.create_conversation(
                user_id=self.user_id, metadata={SESSION_KEY: self.session_id}
            )
            self._conversation = created.id
        for start in range(0, len(kept), MAX_BULK_MESSAGES):
            await self.backend.add_messages(created.id, kept[start : start + MAX_BULK_MESSAGES])
        return _as_item(messages[-1])

    async def clear_session(self) -> None:
        conversation_id = await self._conversation_id(create=False)
        if conversation_id is not None:
            await self.backend.delete_conversation(conversation_id)
        self._conversation = None

    # -- memory for the agent ------------------------------------------------------------
    def instructions(self, base: str | None = None) -> Instructions:
        """An ``Agent(instructions=...)`` callable: ``base`` plus the memory block for the
        run's newest user message, recalled once per run (never raises)."""

        async def instructions(context: RunContextWrapper[Any], agent: Agent[Any]) -> str:
            key = id(context)
            block = self._blocks.get(key)
            if block is None:
                try:  # the run will write to it: have it now, so recall needs no ladder
                    await self._conversation_id(create=True)
                except Exception as exc:
                    self.logger.warn("session lookup failed", exc)
                memory = self.memory
                block = memory.block(await memory.recall(_user_text(context.turn_input)))
                self._blocks[key] = block
                weakref.finalize(context, self._blocks.pop, key, None)
            return with_block(base, block) or ""

        return instructions

    def tools(self) -> list[AgentTool]:
        """``query_memory`` and ``store_memory`` for this session's user, as SDK tools."""
        return function_tools(self.memory.tools())
