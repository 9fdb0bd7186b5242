"""The two guarantees of tools mode (provider-behavior §5.4–§5.5).

Tools mode lets the model decide when to touch memory, which is visible but unreliable:
a model may answer without looking, or forget to store. These two hooks for
:class:`~nams_local.integrations.tool_loop.ToolLoop` close both gaps:

* ``enforce_query_memory(grace_steps)`` — a ``prepare_step``: until ``query_memory`` has
  run, the first ``grace_steps`` steps must call *some* tool, and the next one is forced
  to call ``query_memory``. Once it ran, the constraint is gone.
* ``ensure_memory_stored(tools, fallback)`` — an ``on_finish``: if the model never called
  ``store_memory``, the turn is stored for it (by default the final text as an
  ``interaction``), through the very memory client the tool set is bound to.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Required, TypedDict

from .memory_tools import QUERY_MEMORY, STORE_MEMORY
from .tool_loop import StepOverrides, named_tool
from .tools import memory_tool_context

__all__ = [
    "COPIED_TOOL_SET",
    "EnsureStoredResult",
    "FallbackInput",
    "StoreInput",
    "default_fallback",
    "enforce_query_memory",
    "ensure_memory_stored",
    "finished_tool_names",
]

COPIED_TOOL_SET = (
    "ensure_memory_stored() expects the tool set returned by build_memory_tools() / "
    "create_nams().tools() / .tools_with_mcp(), not a copy of it. Pass that object "
    "directly — copying it into a new dict ({**tools}, dict(tools)) loses the memory "
    "client it is bound to."
)


class StoreInput(TypedDict, total=False):
    """What ``ensure_memory_stored`` stores: ``store_memory``'s arguments."""

    content: Required[str]
    type: Required[str]
    confidence: float
    tags: list[str]


class EnsureStoredResult(TypedDict, total=False):
    """``{"stored": True, "input": ...}`` or ``{"stored": False, "reason": ...}``."""

    stored: Required[bool]
    reason: Literal["already-stored", "nothing-to-store", "failed"]
    input: StoreInput


@dataclass(frozen=True, slots=True)
class FallbackInput:
    """What a fallback sees: the final text (trimmed) and the tools the turn called."""

    text: str
    tool_names: list[str]


Fallback = Callable[[FallbackInput], StoreInput | Awaitable[StoreInput | None] | None]


def default_fallback(turn: FallbackInput) -> StoreInput | None:
    """The final text as an ``interaction`` — never as a ``fact`` (it is unvetted)."""
    return {"content": turn.text, "type": "interaction"} if turn.text else None


def _field(item: Any, *names: str) -> Any:
    for name in names:
        value = item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)
        if value is not None:
            return value
    return None


def _call_names(calls: Any) -> Iterable[str]:
    for call in calls or ():
        name = _field(call, "tool_name", "toolName", "name")
        if isinstance(name, str):
            yield name


def _tool_calls(item: Any) -> Any:
    return _field(item, "tool_calls", "toolCalls")


def finished_tool_names(turn: Any) -> list[str]:
    """Distinct tool names of a finished turn: its ``tool_calls``, then each step's.

    ``turn`` is a ``LoopResult`` or anything shaped like the AI SDK's ``FinishedTurn``
    (a mapping or object with ``text``, ``tool_calls``/``toolCalls`` and ``steps``).
    """
    names = list(_call_names(_tool_calls(turn)))
    for step in _field(turn, "steps") or ():
        names.extend(_call_names(_tool_calls(step)))
    return list(dict.fromkeys(names))


def enforce_query_memory(
    grace_steps: int = 3,
) -> Callable[[int, list[Any]], StepOverrides | None]:
    """A ``prepare_step`` that makes the model call ``query_memory`` (§5.4).

    Keep ``grace_steps`` at least 2 below ``max_steps`` so the forced call and an answer
    still fit in the budget.
    """

    def prepare_step(step_number: int, steps: list[Any]) -> StepOverrides | None:
        if any(QUERY_MEMORY in _call_names(_tool_calls(step)) for step in steps):
            return None
        if step_number < grace_steps:
            return {"tool_choice": "required"}
        return {"tool_choice": named_tool(QUERY_MEMORY)}

    return prepare_step


def ensure_memory_stored(
    tools: object, fallback: Fallback | None = None
) -> Callable[[Any], Awaitable[EnsureStoredResult]]:
    """An ``on_finish`` that stores the turn when the model did not (§5.5).

    ``tools`` must be the very object ``tools()`` returned (checked now, by identity,
    raising ``TypeError`` for a copy). The callback never raises.
    """
    context = memory_tool_context(tools)
    if context is None:
        raise TypeError(COPIED_TOOL_SET)
    choose = fallback or default_fallback

    async def on_finish(turn: Any) -> EnsureStoredResult:
        names = finished_tool_names(turn)
        if STORE_MEMORY in names:
            return {"stored": False, "reason": "already-stored"}
        text = _field(turn, "text")
        try:
            chosen = choose(FallbackInput(text=(text or "").strip(), tool_names=names))
            store_input = await chosen if inspect.isawaitable(chosen) else chosen
            if not store_input or not str(store_input.get("content") or "").strip():
                return {"stored": False, "reason": "nothing-to-store"}
            await context.store(
                store_input["content"],
                store_input["type"],
                store_input.get("confidence"),
                store_input.get("tags") or (),
            )
        except Exception as exc:
            context.logger.error("ensureMemoryStored failed to persist the turn", exc)
            return {"stored": False, "reason": "failed"}
        return {"stored": True, "input": store_input}

    return on_finish
