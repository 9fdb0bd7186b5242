"""Tool statistics, derived from the stored trace tool calls (never kept separately).

Derived on read, so deleting traces or clearing the workspace resets them with nothing to
keep in step. ``failure``, ``error`` and ``timeout`` count as failed; ``pending`` and
``cancelled`` only in the total.
"""

from __future__ import annotations

from sqlalchemy import case, func, select

from nams_local.models import ToolCallStatus

from .. import schema as s
from ..store import Ctx
from .models import ToolStats

__all__ = ["FAILED_STATUSES", "get_tool_stats"]

FAILED_STATUSES = (ToolCallStatus.FAILURE, ToolCallStatus.ERROR, ToolCallStatus.TIMEOUT)

ttc = s.trace_tool_calls


def get_tool_stats(ctx: Ctx, tool_name: str | None) -> list[ToolStats]:
    """One entry per tool (only ``tool_name``'s when given), most used first."""
    succeeded = func.sum(case((ttc.c.status == ToolCallStatus.SUCCESS.value, 1), else_=0))
    failed = func.sum(case((ttc.c.status.in_([x.value for x in FAILED_STATUSES]), 1), else_=0))
    total = func.count()
    stmt = (
        select(
            ttc.c.tool_name,
            total.label("total"),
            succeeded.label("ok"),
            failed.label("failed"),
            func.avg(ttc.c.duration_ms).label("avg_ms"),
        )
        .where(ttc.c.workspace == ctx.workspace)
        .group_by(ttc.c.tool_name)
        .order_by(total.desc(), ttc.c.tool_name)
    )
    if tool_name is not None:
        stmt = stmt.where(ttc.c.tool_name == tool_name)
    return [
        ToolStats(
            name=row.tool_name,
            total_calls=int(row.total),
            successful_calls=int(row.ok),
            failed_calls=int(row.failed),
            success_rate=int(row.ok) / int(row.total) if row.total else 0.0,
            avg_duration_ms=None if row.avg_ms is None else float(row.avg_ms),
        )
        for row in ctx.conn.execute(stmt).all()
    ]
