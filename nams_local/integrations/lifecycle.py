"""The lifecycle hook registry of hooks mode (provider-behavior §7.6, ``compileHooks``).

Apps register handlers per event; the registry runs them so that a hook can rewrite what
flows on (a prompt, a tool's input or output, the turns about to be stored), veto it, or
add context for the model — and can never break a generation: a handler that raises or
runs past its timeout is logged and skipped.

Handlers receive a ``HookInput`` dict and return a ``HookOutput`` dict (or ``None``); they
may be sync or async. Keys are the snake_case forms of the TypeScript fields
(``updatedPrompt`` → ``updated_prompt`` ...). Timeouts apply to async handlers (a sync
handler runs inline and is not interrupted); a timed-out handler is cancelled and its
late result dropped. Timeouts are given in seconds; log lines print milliseconds, as the
TypeScript package does.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Required, TypedDict, get_args

from ..log import MemoryLogger

__all__ = [
    "DEFAULT_HOOK_TIMEOUT",
    "HOOK_EVENTS",
    "MATCHERLESS_EVENTS",
    "HookEntry",
    "HookEvent",
    "HookGroup",
    "HookHandler",
    "HookInput",
    "HookOutcome",
    "HookOutput",
    "HooksConfig",
    "LifecycleHooks",
    "SessionTurn",
    "SystemMessageHandler",
    "compile_hooks",
]

HookEvent = Literal[
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PreMemoryWrite",
    "Stop",
    "SessionEnd",
]

#: Every event, in lifecycle order.
HOOK_EVENTS: tuple[HookEvent, ...] = get_args(HookEvent)

#: Events with no subject to match on: their matcher is ignored (with a warning).
MATCHERLESS_EVENTS: frozenset[HookEvent] = frozenset({"UserPromptSubmit", "PreMemoryWrite", "Stop"})

#: Per-handler timeout in seconds (30 000 ms in the TypeScript package).
DEFAULT_HOOK_TIMEOUT = 30.0

# A matcher made only of these characters is a list of exact names, not a regex.
_PLAIN_MATCHER = re.compile(r"^[A-Za-z0-9_\- ,|]*$")


class SessionTurn(TypedDict, total=False):
    """One message hooks mode stores: ``role`` is ``user`` or ``assistant``."""

    role: Required[str]
    content: Required[str]
    metadata: dict[str, Any]


class HookInput(TypedDict, total=False):
    """What a handler receives. The first four keys are always present; the rest per event:
    ``reason`` (SessionStart/SessionEnd), ``prompt`` (UserPromptSubmit), ``tool_name``,
    ``tool_call_id``, ``input`` (tool events), ``output`` (PostToolUse), ``error`` and
    ``attempt`` (PostToolUseFailure), ``turns`` (PreMemoryWrite/Stop), ``text`` (Stop)."""

    event: Required[HookEvent]
    user_id: Required[str]
    conversation_id: str | None
    timestamp: Required[str]
    reason: str
    prompt: str
    tool_name: str
    tool_call_id: str | None
    input: Any
    output: Any
    error: BaseException
    attempt: int
    turns: list[SessionTurn]
    text: str | None


class HookOutput(TypedDict, total=False):
    """What a handler may return; every event honours the last two keys."""

    decision: Literal["block"]
    block_reason: str
    updated_prompt: str
    permission_decision: Literal["allow", "deny"]
    permission_decision_reason: str
    updated_input: Any
    updated_output: Any
    retry: bool
    updated_turns: list[SessionTurn]
    additional_context: str
    system_message: str


HookHandler = Callable[[HookInput], HookOutput | Awaitable[HookOutput | None] | None]
SystemMessageHandler = Callable[[str, HookEvent], None]


@dataclass(frozen=True, slots=True)
class HookEntry:
    """A handler with an optional timeout (seconds) and a name for log lines."""

    handler: HookHandler
    timeout: float | None = None
    name: str | None = None


@dataclass(frozen=True, slots=True)
class HookGroup:
    """Handlers that run when ``matcher`` matches the event's subject (see module doc)."""

    hooks: Sequence[HookHandler | HookEntry | Mapping[str, Any]]
    matcher: str | None = None


#: Per event: groups, bare handlers (a group matching everything), or group dicts
#: ``{"matcher": ..., "hooks": [...]}``.
HooksConfig = Mapping[str, Sequence[HookGroup | HookHandler | Mapping[str, Any]]]

# The input key each event lets handlers rewrite, and the output key that rewrites it.
_REWRITES: dict[str, tuple[str, str]] = {
    "UserPromptSubmit": ("prompt", "updated_prompt"),
    "PreToolUse": ("input", "updated_input"),
    "PostToolUse": ("output", "updated_output"),
    "PreMemoryWrite": ("turns", "updated_turns"),
}


@dataclass(slots=True)
class HookOutcome:
    """The result of running one event's handlers.

    ``input`` is the input as rewritten by the handlers; ``blocked``/``reason`` the first
    deny; ``context`` the non-empty ``additional_context`` values in order.
    """

    input: HookInput
    blocked: bool = False
    reason: str | None = None
    retry: bool = False
    context: list[str] = field(default_factory=list)
    system_messages: list[str] = field(default_factory=list)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


Matcher = Callable[[str], bool]


def _everything(_: str) -> bool:
    return True


def _nothing(_: str) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class _Compiled:
    matches: Matcher
    entries: tuple[HookEntry, ...]


def _entry(raw: HookHandler | HookEntry | Mapping[str, Any]) -> HookEntry:
    if isinstance(raw, HookEntry):
        return raw
    if isinstance(raw, Mapping):
        return HookEntry(raw["handler"], raw.get("timeout"), raw.get("name"))
    return HookEntry(raw)


def _handler_name(entry: HookEntry) -> str:
    if entry.name:
        return entry.name
    name = getattr(entry.handler, "__name__", "")
    return name if name and name != "<lambda>" else "anonymous"


class LifecycleHooks:
    """The compiled registry: ``has(event)`` and ``run(event, input, subject)``."""

    def __init__(
        self,
        groups: dict[HookEvent, list[_Compiled]],
        logger: MemoryLogger,
        on_system_message: SystemMessageHandler | None = None,
    ) -> None:
        self._groups = groups
        self.logger = logger
        self.on_system_message = on_system_message or self._default_system_message

    def _default_system_message(self, message: str, event: HookEvent) -> None:
        self.logger.warn(f"{event} hook: {message}")

    def has(self, *events: HookEvent) -> bool:
        """Whether any of ``events`` has at least one handler registered."""
        return any(self._groups.get(event) for event in events)

    @staticmethod
    def base_input(event: HookEvent, user_id: str, conversation_id: str | None) -> HookInput:
        return {
            "event": event,
            "user_id": user_id,
            "conversation_id": conversation_id,
            "timestamp": _now(),
        }

    async def run(
        self, event: HookEvent, payload: HookInput, subject: str | None = None
    ) -> HookOutcome:
        """Run the handlers matching ``subject`` in order; never raises."""
        outcome = HookOutcome(input=payload.copy())
        for group in self._groups.get(event, []):
            if not group.matches(subject or ""):
                continue
            for entry in group.entries:
                output = await self._call(event, entry, outcome.input)
                if output and self._apply(event, output, outcome):
                    return outcome
        return outcome

    async def _call(self, event: HookEvent, entry: HookEntry, payload: HookInput) -> Any:
        name = _handler_name(entry)
        timeout = entry.timeout if entry.timeout is not None else DEFAULT_HOOK_TIMEOUT
        try:
            result = entry.handler(payload.copy())
            if inspect.isawaitable(result):
                return await asyncio.wait_for(result, timeout)
            return result
        except TimeoutError:
            self.logger.warn(
                f"{event} hook {name} timed out after {round(timeout * 1000)}ms, ignoring it"
            )
        except Exception as exc:
            self.logger.error(f"{event} hook {name} threw, ignoring it", exc)
        return None

    def _apply(self, event: HookEvent, output: Any, outcome: HookOutcome) -> bool:
        """Fold one handler's output into ``outcome``; ``True`` when it blocked."""
        if not isinstance(output, Mapping):
            return False
        rewrite = _REWRITES.get(event)
        if rewrite is not None:
            key, update = rewrite
            if update in output and self._valid_rewrite(update, output[update]):
                outcome.input[key] = output[update]  # type: ignore[literal-required]
        context = output.get("additional_context")
        if isinstance(context, str) and context:
            outcome.context.append(context)
        message = output.get("system_message")
        if isinstance(message, str) and message:
            outcome.system_messages.append(message)
            self._send_system_message(message, event)
        if output.get("retry") is True:
            outcome.retry = True
        if output.get("permission_decision") == "deny" or output.get("decision") == "block":
            outcome.blocked = True
            outcome.reason = (
                output.get("permission_decision_reason")
                or output.get("block_reason")
                or f"blocked by a {event} hook"
            )
            return True
        return False

    @staticmethod
    def _valid_rewrite(update: str, value: Any) -> bool:
        if update == "updated_prompt":
            return isinstance(value, str)
        if update == "updated_turns":
            return isinstance(value, list)
        return True

    def _send_system_message(self, message: str, event: HookEvent) -> None:
        try:
            self.on_system_message(message, event)
        except Exception as exc:
            self.logger.error(f"{event} on_system_message failed", exc)


def _matcher(event: HookEvent, matcher: str | None, logger: MemoryLogger) -> Matcher:
    if matcher is None or matcher in ("", "*"):
        return _everything
    if event in MATCHERLESS_EVENTS:
        logger.warn(f"{event} has nothing to match on, so its matcher {matcher} is ignored")
        return _everything
    if _PLAIN_MATCHER.match(matcher):
        names = {n.strip() for n in re.split(r"[|,]", matcher) if n.strip()}
        return (lambda subject: subject in names) if names else _everything
    try:
        pattern = re.compile(matcher)
    except re.error:
        logger.error(f"invalid {event} hook matcher {matcher}, it will never match")
        return _nothing
    return lambda subject: pattern.search(subject) is not None


def _group(raw: HookGroup | HookHandler | Mapping[str, Any]) -> HookGroup:
    if isinstance(raw, HookGroup):
        return raw
    if isinstance(raw, Mapping):
        return HookGroup(hooks=list(raw.get("hooks", [])), matcher=raw.get("matcher"))
    return HookGroup(hooks=[raw])


def compile_hooks(
    config: HooksConfig | None,
    logger: MemoryLogger,
    on_system_message: SystemMessageHandler | None = None,
) -> LifecycleHooks:
    """Validate and compile a hook configuration (unknown event names raise ``ValueError``)."""
    compiled: dict[HookEvent, list[_Compiled]] = {}
    for name, groups in (config or {}).items():
        if name not in HOOK_EVENTS:
            raise ValueError(f"unknown hook event {name!r}; expected one of {HOOK_EVENTS}")
        event: HookEvent = name
        for raw in groups:
            group = _group(raw)
            entries = tuple(_entry(h) for h in group.hooks)
            if entries:
                matches = _matcher(event, group.matcher, logger)
                compiled.setdefault(event, []).append(_Compiled(matches, entries))
    return LifecycleHooks(compiled, logger, on_system_message)
