"""Hooks mode: memory the app drives explicitly, at fixed points of its own agent loop.

``create_nams(...).hooks(scope)`` returns ``NamsHooks`` (provider-behavior §7): the app
calls ``prepare(prompt)`` before a generation (history + instructions from hooks),
wraps its tools with ``with_hooks(tools)``, passes ``on_finish()`` as the loop's finish
callback (stores the turns, including audit records of every tool call), and calls
``end()`` when the session is over. Nothing memory-related is shown to the model, and a
backend failure is logged, never raised — only a missing ``user_id`` raises, because that
is a programming error, not a runtime condition.

Log lines are the TypeScript package's, word for word. Deliberate differences: keys are
snake_case (``nams_kind`` metadata, ``block_reason`` ...); write failures in ``on_finish``
are warnings (memory failures in the request path are warnings throughout nams-local);
a blocked ``PreMemoryWrite`` also skips ``Stop``, since nothing was written.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..backend import MemoryBackend
from ..errors import InvalidInputError
from ..models import NewMessage
from ..persistence import ConversationResolver
from ..scope import Scope
from .chat import ChatMessage
from .lifecycle import (
    HookEvent,
    HookOutcome,
    HooksConfig,
    SessionTurn,
    SystemMessageHandler,
    compile_hooks,
)
from .middleware import MemoryConfig
from .session_turns import prompt_text, session_history, turns_from_response
from .tool import Tool, ToolSet
from .tool_loop import LoopResult, current_tool_call_id

__all__ = [
    "DEFAULT_SESSION_LIMIT",
    "MAX_QUEUED_CONTEXT",
    "NamsHooks",
    "OnFinish",
    "PreparedTurn",
]

DEFAULT_SESSION_LIMIT = 40
#: Queued ``additional_context`` entries kept per session key (the most recent win).
MAX_QUEUED_CONTEXT = 20
_TOOL_EVENTS: tuple[HookEvent, ...] = ("PreToolUse", "PostToolUse", "PostToolUseFailure")

OnFinish = Callable[[Any], Awaitable[None]]


@dataclass(slots=True)
class PreparedTurn:
    """What ``prepare`` returns: the messages to send and the instructions from hooks.

    ``instructions`` is hook context for the system prompt; it is never put into
    ``messages`` (the AI SDK rejects system messages there). ``model_messages()`` gives the
    OpenAI-shaped list with the instructions as a leading system message.
    """

    messages: list[ChatMessage]
    prompt: str
    instructions: str | None = None
    blocked: bool = False
    block_reason: str | None = None
    system_messages: list[str] = field(default_factory=list)

    def model_messages(self) -> list[ChatMessage]:
        if not self.instructions:
            return list(self.messages)
        return [{"role": "system", "content": self.instructions}, *self.messages]


def _field(source: Any, name: str, camel: str | None = None) -> Any:
    """``source[name]`` or ``source.name`` (or the camelCase spelling), else ``None``."""
    if source is None:
        return None
    for key in (name, camel) if camel else (name,):
        if isinstance(source, Mapping):
            if key in source:
                return source[key]
        elif hasattr(source, key):
            return getattr(source, key)
    return None


def _session_key(scope: Scope) -> str:
    return f"{scope.user_id}::{scope.conversation_id or ''}"


def _partial_scope(scope: Scope | Mapping[str, Any] | None) -> tuple[str | None, str | None]:
    if scope is None:
        return None, None
    if isinstance(scope, Scope):
        return scope.user_id, scope.conversation_id
    return _field(scope, "user_id", "userId"), _field(scope, "conversation_id", "conversationId")


class NamsHooks:
    """``load_session``, ``prepare``, ``with_hooks``, ``on_finish`` and ``end`` for one app.

    Per-instance state: the conversation cache, which session keys have started, and
    the context queued for the next ``prepare`` (both keyed ``"<user>::<conversation>"``).
    """

    def __init__(
        self,
        backend: MemoryBackend,
        config: MemoryConfig,
        scope: Scope | Mapping[str, Any] | None = None,
        *,
        hooks: HooksConfig | None = None,
        on_system_message: SystemMessageHandler | None = None,
        session_limit: int = DEFAULT_SESSION_LIMIT,
    ) -> None:
        self.backend = backend
        self.config = config
        self.logger = config.logger
        #: Defaults for every method (each also takes ``user_id``/``conversation_id``).
        self.user_id, self.conversation_id = _partial_scope(scope)
        self.session_limit = session_limit
        self.registry = compile_hooks(hooks, self.logger, on_system_message)
        self.resolver = ConversationResolver(
            backend, self.logger, config.workspace_id, config.lookup_timeout
        )
        self._started: set[str] = set()
        self._queued: dict[str, deque[str]] = {}

    # -- scope and shared plumbing ---------------------------------------------------------
    def _scope(self, method: str, user_id: str | None, conversation_id: str | None) -> Scope:
        user = user_id or self.user_id
        if not user:
            raise InvalidInputError(
                f"{method} needs a user_id — pass it per call, set it on hooks(), "
                "or (for on_finish) provide it via runtime_context"
            )
        return Scope(user, conversation_id or self.conversation_id)

    def _queue(self, key: str, context: Sequence[str]) -> None:
        if context:
            self._queued.setdefault(key, deque(maxlen=MAX_QUEUED_CONTEXT)).extend(context)

    def queued_context(self, user_id: str, conversation_id: str | None = None) -> list[str]:
        """The context waiting for the next ``prepare`` of this session (oldest first)."""
        return list(self._queued.get(_session_key(Scope(user_id, conversation_id)), ()))

    async def _run(
        self, event: HookEvent, scope: Scope, subject: str | None = None, **fields: Any
    ) -> HookOutcome:
        payload = self.registry.base_input(event, scope.user_id, scope.conversation_id)
        payload.update(fields)  # type: ignore[typeddict-item]
        return await self.registry.run(event, payload, subject)

    # -- §7.1 ------------------------------------------------------------------------------
    async def load_session(
        self,
        *,
        user_id: str | None = None,
        conversation_id: str | None = None,
        limit: int | None = None,
    ) -> list[ChatMessage]:
        """The stored conversation as ``{role, content}`` messages, oldest first.

        Never creates a conversation; audit records are left out; ``[]`` on any failure.
        """
        scope = self._scope("load_session", user_id, conversation_id)
        try:
            existing = await self.resolver.find_existing(scope)
            if existing is None:
                return []
            stored = await asyncio.wait_for(
                self.backend.list_messages(
                    existing, limit=limit if limit is not None else self.session_limit
                ),
                self.config.lookup_timeout,
            )
            return session_history(reversed(stored))
        except Exception as exc:
            self.logger.warn("loadSession failed, continuing without history", exc)
            return []

    # -- §7.3 ------------------------------------------------------------------------------
    async def prepare(
        self,
        prompt: str,
        *,
        user_id: str | None = None,
        conversation_id: str | None = None,
        limit: int | None = None,
    ) -> PreparedTurn:
        """History plus the prompt, after ``SessionStart`` and ``UserPromptSubmit`` ran."""
        scope = self._scope("prepare", user_id, conversation_id)
        key = _session_key(scope)
        existing = await self.resolver.find_existing(scope)
        hook_scope = Scope(scope.user_id, existing or scope.conversation_id)
        context: list[str] = []
        system_messages: list[str] = []
        if self.registry.has("SessionStart") and key not in self._started:
            self._started.add(key)
            reason = "resumed" if existing else "created"
            started = await self._run("SessionStart", hook_scope, reason, reason=reason)
            context += started.context
            system_messages += started.system_messages
        if self.registry.has("UserPromptSubmit"):
            submitted = await self._run("UserPromptSubmit", hook_scope, prompt=prompt)
            prompt = submitted.input["prompt"]
            context += submitted.context
            system_messages += submitted.system_messages
            if submitted.blocked:
                return PreparedTurn(
                    messages=[],
                    prompt=prompt,
                    blocked=True,
                    block_reason=submitted.reason,
                    system_messages=system_messages,
                )
        history = await self.load_session(
            user_id=scope.user_id, conversation_id=scope.conversation_id, limit=limit
        )
        instructions = "\n".join([*self._queued.pop(key, ()), *context])
        return PreparedTurn(
            messages=[*history, {"role": "user", "content": prompt}],
            prompt=prompt,
            instructions=instructions or None,
            system_messages=system_messages,
        )

    # -- §7.4 ------------------------------------------------------------------------------
    def with_hooks(self, tools: ToolSet, scope: Scope | Mapping[str, Any] | None = None) -> ToolSet:
        """``tools`` with the tool hooks around each ``execute``.

        The same object comes back when no tool hook is registered. Otherwise a new tool
        set of new ``Tool`` objects (so pass the wrapped set to the loop, and the original
        one to ``ensure_memory_stored``). The hooks' ``tool_call_id`` is the model's call
        id when a ``ToolLoop`` runs the tool (``current_tool_call_id``), else ``None``.
        """
        if not self.registry.has(*_TOOL_EVENTS):
            return tools
        user_id, conversation_id = _partial_scope(scope)
        return {name: self._hooked(tool, user_id, conversation_id) for name, tool in tools.items()}

    def _hooked(self, tool: Tool, user_id: str | None, conversation_id: str | None) -> Tool:
        async def execute(arguments: dict[str, Any]) -> Any:
            user = user_id or self.user_id
            if not user:
                self.logger.warn(
                    f"withHooks needs a userId to run {tool.name} hooks, running the tool unhooked"
                )
                return await tool.run(arguments)
            scope = Scope(user, conversation_id or self.conversation_id)
            return await self._run_tool(tool, scope, arguments)

        return Tool(tool.name, tool.description, tool.parameters, execute)

    async def _run_tool(self, tool: Tool, scope: Scope, arguments: dict[str, Any]) -> Any:
        key = _session_key(scope)
        call: dict[str, Any] = {"tool_name": tool.name, "tool_call_id": current_tool_call_id()}
        tool_input: Any = arguments
        if self.registry.has("PreToolUse"):
            pre = await self._run("PreToolUse", scope, tool.name, **call, input=arguments)
            self._queue(key, pre.context)
            if pre.blocked:
                self.logger.warn(f"PreToolUse denied {tool.name}: {pre.reason}")
                return {"blocked": True, "tool_name": tool.name, "reason": pre.reason}
            tool_input = pre.input["input"]
        attempt = 1
        while True:
            try:
                output = await tool.run(tool_input)
                break
            except Exception as exc:
                failed = await self._run(
                    "PostToolUseFailure",
                    scope,
                    tool.name,
                    **call,
                    input=tool_input,
                    error=exc,
                    attempt=attempt,
                )
                self._queue(key, failed.context)
                if not (failed.retry and attempt == 1):
                    raise
                attempt += 1
        if self.registry.has("PostToolUse"):
            post = await self._run(
                "PostToolUse", scope, tool.name, **call, input=tool_input, output=output
            )
            self._queue(key, post.context)
            output = post.input["output"]
        return output

    # -- §7.2 ------------------------------------------------------------------------------
    def on_finish(self, scope: Scope | Mapping[str, Any] | None = None) -> OnFinish:
        """A finish callback that stores the generation.

        Pass it as ``ToolLoop(..., on_finish=hooks.on_finish({"prompt": prompt}))``: a
        ``LoopResult`` works as the event. Any other event may be a dict or an object with
        ``text``, ``response_messages`` (the OpenAI-shaped messages the generation added)
        and ``runtime_context`` (read from ``final_step.runtime_context`` first) carrying
        ``user_id``, ``conversation_id``, ``prompt`` and ``persist_user_prompt``; each
        falls back to ``scope``.
        """
        closure_user, closure_conversation = _partial_scope(scope)
        closure_prompt = _field(scope, "prompt") if isinstance(scope, Mapping) else None
        closure_persist = (
            _field(scope, "persist_user_prompt", "persistUserPrompt")
            if isinstance(scope, Mapping)
            else None
        )

        async def finish(event: Any) -> None:
            context = _field(_field(event, "final_step", "finalStep"), "runtime_context")
            context = context or _field(event, "runtime_context", "runtimeContext") or {}

            def pick(name: str, camel: str, fallback: Any) -> Any:
                value = _field(context, name, camel)
                return fallback if value is None else value

            turn_scope = self._scope(
                "on_finish",
                pick("user_id", "userId", closure_user),
                pick("conversation_id", "conversationId", closure_conversation),
            )
            prompt = pick("prompt", "prompt", closure_prompt)
            persist_prompt = pick("persist_user_prompt", "persistUserPrompt", closure_persist)
            text = _field(event, "text")
            turns: list[SessionTurn] = []
            user_text = prompt_text(prompt) if persist_prompt is not False else ""
            if user_text:
                turns.append({"role": "user", "content": user_text})
            response = _field(event, "response_messages", "responseMessages")
            if response is None and isinstance(event, LoopResult):
                response = event.messages
            if response:
                turns.extend(turns_from_response(response))
            elif isinstance(text, str) and text:
                turns.append({"role": "assistant", "content": text})
            await self._finish(turn_scope, turns, text if isinstance(text, str) else None)

        return finish

    async def _finish(self, scope: Scope, turns: list[SessionTurn], text: str | None) -> None:
        key = _session_key(scope)
        if self.registry.has("PreMemoryWrite"):
            pre = await self._run("PreMemoryWrite", scope, turns=turns)
            self._queue(key, pre.context)
            if pre.blocked:
                self.logger.warn(f"PreMemoryWrite dropped this write: {pre.reason}")
                return
            turns = pre.input["turns"]
        conversation_id = await self._persist(scope, turns)
        if self.registry.has("Stop"):
            stop_scope = Scope(scope.user_id, conversation_id or scope.conversation_id)
            stopped = await self._run("Stop", stop_scope, text=text, turns=turns)
            self._queue(key, stopped.context)

    async def _persist(self, scope: Scope, turns: list[SessionTurn]) -> str | None:
        """Resolve (creating if needed) and write ``turns``: one bulk add, else one by one."""
        timeout = self.config.lookup_timeout
        try:
            conversation_id = await self.resolver.resolve(scope)
            if not turns:
                return conversation_id
            try:
                batch = [NewMessage.model_validate(turn) for turn in turns]
                await asyncio.wait_for(self.backend.add_messages(conversation_id, batch), timeout)
            except Exception as exc:
                self.logger.warn("bulkAddMessages failed, falling back to per-message writes", exc)
                for turn in turns:
                    await self._persist_one(conversation_id, turn)
            return conversation_id
        except Exception as exc:
            self.logger.warn("onFinish failed to persist the generation", exc)
            return None

    async def _persist_one(self, conversation_id: str, turn: SessionTurn) -> None:
        role = turn.get("role", "?")
        try:
            await asyncio.wait_for(
                self.backend.add_message(
                    conversation_id, role, turn["content"], turn.get("metadata")
                ),
                self.config.lookup_timeout,
            )
        except Exception as exc:
            self.logger.warn(f"persist {role} turn failed", exc)

    # -- §7.5 ------------------------------------------------------------------------------
    async def end(
        self,
        *,
        user_id: str | None = None,
        conversation_id: str | None = None,
        reason: str | None = None,
    ) -> None:
        """Run ``SessionEnd`` and forget the session, so the next ``prepare`` starts anew."""
        scope = self._scope("end", user_id, conversation_id)
        reason = reason or "other"
        if self.registry.has("SessionEnd"):
            await self._run("SessionEnd", scope, reason, reason=reason)
        key = _session_key(scope)
        self._started.discard(key)
        self._queued.pop(key, None)
