"""Silver reasoning memory and Gold similar traces of the TCK bridge.

Traces are the engine's legacy task traces (``SQLiteBackend.legacy``): numbered steps,
tool calls with JSON arguments and results, statistics derived from the stored calls. A
``step_id`` that names a Platinum agent step (``record_step``) is accepted by
``record_tool_call`` too, so such calls show up in ``explain_step`` and
``get_trace_by_conversation``.
"""

from __future__ import annotations

import json

from nams_local.errors import NotFoundError
from nams_local.models import ToolCallStatus

from . import wire
from .bodies import (
    AddStep,
    CompleteTrace,
    GetSimilarTraces,
    GetToolStats,
    ListTraces,
    RecordToolCall,
    StartTrace,
    TraceId,
)
from .registry import Bridge, Reply, bridge_method

__all__: list[str] = []


@bridge_method(StartTrace)
async def start_trace(b: Bridge, body: StartTrace) -> Reply:
    return wire.trace(await b.legacy.start_trace(body.session_id, body.task))


@bridge_method(AddStep)
async def add_step(b: Bridge, body: AddStep) -> Reply:
    step = await b.legacy.add_trace_step(body.trace_id, body.thought, body.action, body.observation)
    return wire.trace_step(step)


@bridge_method(RecordToolCall)
async def record_tool_call(b: Bridge, body: RecordToolCall) -> Reply:
    try:
        call = await b.legacy.record_trace_tool_call(
            body.step_id,
            body.tool_name,
            body.arguments,
            body.result,
            body.status,
            body.duration_ms,
            body.error,
        )
    except NotFoundError:
        return await _record_on_agent_step(b, body)
    return wire.trace_tool_call(call)


async def _record_on_agent_step(b: Bridge, body: RecordToolCall) -> Reply:
    """The call belongs to a Platinum agent step (engine tool calls keep JSON text)."""
    call = await b.backend.record_tool_call(
        body.tool_name,
        json.dumps(body.arguments, ensure_ascii=False),
        None if body.result is None else json.dumps(body.result, ensure_ascii=False),
        ToolCallStatus(body.status),
        body.step_id,
        body.duration_ms,
    )
    return wire.agent_tool_call(call) | {"error": body.error}


@bridge_method(CompleteTrace)
async def complete_trace(b: Bridge, body: CompleteTrace) -> Reply:
    return wire.trace(await b.legacy.complete_trace(body.trace_id, body.outcome, body.success))


@bridge_method(TraceId)
async def get_trace_with_steps(b: Bridge, body: TraceId) -> Reply:
    found = await b.legacy.get_trace(body.trace_id)
    return wire.trace(found) if found is not None else None


@bridge_method(ListTraces)
async def list_traces(b: Bridge, body: ListTraces) -> Reply:
    """Newest first, without steps (``get_trace_with_steps`` has them)."""
    return [wire.trace(t) for t in await b.legacy.list_traces(body.session_id, body.limit)]


@bridge_method(GetToolStats)
async def get_tool_stats(b: Bridge, body: GetToolStats) -> Reply:
    return [wire.tool_stats(s) for s in await b.legacy.tool_stats(body.tool_name)]


@bridge_method(GetSimilarTraces)
async def get_similar_traces(b: Bridge, body: GetSimilarTraces) -> Reply:
    found = await b.legacy.similar_traces(body.task, body.limit, body.success_only)
    return [wire.trace(t) for t in found]
