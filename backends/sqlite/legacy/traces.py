"""Task traces: what an agent did for one task, as numbered steps with tool calls.

A trace belongs to a session (a plain string: it creates no conversation), its steps are
numbered 1, 2, 3 in the order they were added, and each step's tool calls keep their JSON
``arguments`` and ``result`` exactly. Completing sets the outcome, success and end time
(again on a second completion). ``similar_traces`` ranks by word overlap with the task.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Row, func, select, update

from nams_local.models import ToolCallStatus

from .. import schema as s
from ..rows import dumps, insert_rows, loads, new_id, now, when
from ..store import Ctx
from .models import Trace, TraceStep, TraceToolCall
from .overlap import rank_by_overlap

__all__ = [
    "add_step",
    "complete_trace",
    "get_trace",
    "list_traces",
    "record_tool_call",
    "similar_traces",
    "start_trace",
]

t, ts, ttc = s.traces, s.trace_steps, s.trace_tool_calls


def _trace_row(ctx: Ctx, trace_id: str) -> Any:
    return ctx.row(t, trace_id, "trace")


def _to_call(row: Row[Any], step_id: str) -> TraceToolCall:
    return TraceToolCall(
        id=row.id,
        step_id=step_id,
        tool_name=row.tool_name,
        arguments=loads(row.arguments),
        result=None if row.result is None else loads(row.result),
        status=ToolCallStatus(row.status),
        duration_ms=row.duration_ms,
        error=row.error,
        created_at=when(row.created_at),
    )


def _to_trace(row: Row[Any], steps: list[TraceStep]) -> Trace:
    return Trace(
        id=row.id,
        session_id=row.session_id,
        task=row.task,
        steps=steps,
        outcome=row.outcome,
        success=None if row.success is None else bool(row.success),
        started_at=datetime.fromisoformat(row.started_at),
        completed_at=when(row.completed_at),
    )


def _steps_of(ctx: Ctx, traces: list[Row[Any]]) -> dict[int, list[TraceStep]]:
    """The steps (by number) of several traces, each with its tool calls (in order)."""
    by_trace: dict[int, list[TraceStep]] = {row.pk: [] for row in traces}
    trace_ids = {row.pk: row.id for row in traces}
    step_rows = ctx.conn.execute(
        select(ts)
        .where(ts.c.trace_pk.in_(list(by_trace)))
        .order_by(ts.c.trace_pk, ts.c.step_number)
    ).all()
    calls: dict[int, list[TraceToolCall]] = {row.pk: [] for row in step_rows}
    step_ids = {row.pk: row.id for row in step_rows}
    for call in ctx.conn.execute(
        select(ttc).where(ttc.c.step_pk.in_(list(calls))).order_by(ttc.c.pk)
    ).all():
        calls[call.step_pk].append(_to_call(call, step_ids[call.step_pk]))
    for row in step_rows:
        by_trace[row.trace_pk].append(
            TraceStep(
                id=row.id,
                trace_id=trace_ids[row.trace_pk],
                step_number=row.step_number,
                thought=row.thought,
                action=row.action,
                observation=row.observation,
                tool_calls=calls[row.pk],
                created_at=when(row.created_at),
            )
        )
    return by_trace


def start_trace(ctx: Ctx, session_id: str, task: str) -> Trace:
    trace_id = new_id()
    insert_rows(
        ctx.conn,
        t,
        [
            {
                "id": trace_id,
                "workspace": ctx.workspace,
                "session_id": session_id,
                "task": task,
                "started_at": now(),
            }
        ],
    )
    return _to_trace(_trace_row(ctx, trace_id), [])


def add_step(
    ctx: Ctx, trace_id: str, thought: str | None, action: str | None, observation: str | None
) -> TraceStep:
    """Append a step numbered one past the trace's last step."""
    trace = _trace_row(ctx, trace_id)
    last = ctx.conn.execute(
        select(func.max(ts.c.step_number)).where(ts.c.trace_pk == trace.pk)
    ).scalar()
    step_id, stamp = new_id(), now()
    number = int(last or 0) + 1
    insert_rows(
        ctx.conn,
        ts,
        [
            {
                "id": step_id,
                "workspace": ctx.workspace,
                "trace_pk": trace.pk,
                "step_number": number,
                "thought": thought,
                "action": action,
                "observation": observation,
                "created_at": stamp,
            }
        ],
    )
    return TraceStep(
        id=step_id,
        trace_id=trace.id,
        step_number=number,
        thought=thought,
        action=action,
        observation=observation,
        created_at=when(stamp),
    )


def record_tool_call(
    ctx: Ctx,
    step_id: str,
    tool_name: str,
    arguments: dict[str, Any],
    result: Any,
    status: ToolCallStatus,
    duration_ms: int | None,
    error: str | None,
) -> TraceToolCall:
    step = ctx.row(ts, step_id, "trace step")
    call_id = new_id()
    insert_rows(
        ctx.conn,
        ttc,
        [
            {
                "id": call_id,
                "workspace": ctx.workspace,
                "step_pk": step.pk,
                "tool_name": tool_name,
                "arguments": dumps(arguments),
                "result": None if result is None else dumps(result),
                "status": status.value,
                "duration_ms": duration_ms,
                "error": error,
                "created_at": now(),
            }
        ],
    )
    row = ctx.conn.execute(select(ttc).where(ttc.c.id == call_id)).one()
    return _to_call(row, step.id)


def complete_trace(ctx: Ctx, trace_id: str, outcome: str | None, success: bool | None) -> Trace:
    """Set outcome and success exactly as given (``None`` clears) and the end time."""
    trace = _trace_row(ctx, trace_id)
    ctx.conn.execute(
        update(t)
        .where(t.c.pk == trace.pk)
        .values(
            outcome=outcome,
            success=None if success is None else int(success),
            completed_at=now(),
        )
    )
    found = get_trace(ctx, trace_id)
    assert found is not None
    return found


def get_trace(ctx: Ctx, trace_id: str) -> Trace | None:
    """The trace with its steps and their tool calls; ``None`` when unknown."""
    row = ctx.conn.execute(
        select(t).where(t.c.id == trace_id, t.c.workspace == ctx.workspace)
    ).first()
    if row is None:
        return None
    return _to_trace(row, _steps_of(ctx, [row])[row.pk])


def list_traces(
    ctx: Ctx, session_id: str | None, limit: int, *, with_steps: bool = False
) -> list[Trace]:
    """Newest first; one session's when ``session_id`` is given."""
    stmt = select(t).where(t.c.workspace == ctx.workspace)
    if session_id is not None:
        stmt = stmt.where(t.c.session_id == session_id)
    rows = ctx.conn.execute(stmt.order_by(t.c.started_at.desc(), t.c.pk.desc()).limit(limit)).all()
    steps = _steps_of(ctx, list(rows)) if with_steps else {}
    return [_to_trace(row, steps.get(row.pk, [])) for row in rows]


def similar_traces(
    ctx: Ctx, task: str, limit: int, success_only: bool, threshold: float = 0.0
) -> list[Trace]:
    """Traces of every session ranked by word overlap of their task with ``task``.

    ``success_only`` keeps completed traces whose ``success`` is true (before the limit).
    """
    stmt = select(t).where(t.c.workspace == ctx.workspace)
    if success_only:
        stmt = stmt.where(t.c.success == 1)
    rows = {row.id: row for row in ctx.conn.execute(stmt.order_by(t.c.pk)).all()}
    ranked = rank_by_overlap(
        task, ((key, row.task) for key, row in rows.items()), limit=limit, threshold=threshold
    )
    chosen = [rows[key] for key, _ in ranked]
    steps = _steps_of(ctx, chosen)
    return [
        _to_trace(row, steps[row.pk]).model_copy(update={"score": value})
        for row, (_, value) in zip(chosen, ranked, strict=True)
    ]
