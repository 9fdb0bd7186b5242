"""Reasoning memory: steps, tool calls, traces, and which entities a step touched.

The hosted contract has ``influencedEntities`` and entity provenance but no request field
that links a step to an entity. The local engine derives the link from the text: a step
influenced an entity when the entity's name (or the name of an entity merged into it)
appears as a whole word in the step's reasoning, action or result, or in the input or
output of one of its tool calls.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import Row, insert, select

from nams_local.errors import NotFoundError
from nams_local.models import (
    ConversationTrace,
    EntityProvenance,
    InfluencedEntity,
    ReasoningStep,
    StepExplanation,
    ToolCall,
    ToolCallStatus,
)

from . import schema as s
from .conversations import conversation_row
from .entities import entity_row
from .rows import new_id, now, to_step, to_tool_call
from .store import Ctx

__all__ = [
    "explain_step",
    "get_provenance",
    "get_trace",
    "list_steps",
    "record_step",
    "record_tool_call",
]

st, tc, c, e = s.steps, s.tool_calls, s.conversations, s.entities


def record_step(
    ctx: Ctx, conversation_id: str, reasoning: str, action_taken: str, result: str | None
) -> ReasoningStep:
    conv = conversation_row(ctx, conversation_id)
    step_id = new_id()
    ctx.conn.execute(
        insert(st).values(
            id=step_id,
            workspace=ctx.workspace,
            conversation_pk=conv.pk,
            reasoning=reasoning,
            action_taken=action_taken,
            result=result,
            created_at=now(),
        )
    )
    row = ctx.conn.execute(select(st).where(st.c.id == step_id)).one()
    return to_step(row, conv.id)


def list_steps(ctx: Ctx, conversation_id: str) -> list[ReasoningStep]:
    conv = conversation_row(ctx, conversation_id)
    rows = ctx.conn.execute(
        select(st).where(st.c.conversation_pk == conv.pk).order_by(st.c.pk)
    ).all()
    return [to_step(row, conv.id) for row in rows]


def _step_row(ctx: Ctx, step_id: str) -> Row[Any]:
    row = ctx.conn.execute(
        select(st, c.c.id.label("conv_id"))
        .join(c, c.c.pk == st.c.conversation_pk)
        .where(st.c.id == step_id, st.c.workspace == ctx.workspace)
    ).first()
    if row is None:
        raise NotFoundError(f"reasoning step {step_id!r} not found")
    return row


def record_tool_call(
    ctx: Ctx,
    tool_name: str,
    input_: str,
    output: str | None,
    status: ToolCallStatus,
    step_id: str | None,
    duration_ms: int | None,
) -> ToolCall:
    step_pk = _step_row(ctx, step_id).pk if step_id else None
    call_id = new_id()
    ctx.conn.execute(
        insert(tc).values(
            id=call_id,
            workspace=ctx.workspace,
            step_pk=step_pk,
            tool_name=tool_name,
            input=input_,
            output=output,
            status=status.value,
            duration_ms=duration_ms,
            created_at=now(),
        )
    )
    row = ctx.conn.execute(select(tc).where(tc.c.id == call_id)).one()
    return to_tool_call(row, step_id)


def _tool_calls(ctx: Ctx, step_rows: list[Row[Any]]) -> list[ToolCall]:
    ids = {row.pk: row.id for row in step_rows}
    if not ids:
        return []
    rows = ctx.conn.execute(select(tc).where(tc.c.step_pk.in_(list(ids))).order_by(tc.c.pk)).all()
    return [to_tool_call(row, ids[row.step_pk]) for row in rows]


def get_trace(ctx: Ctx, conversation_id: str) -> ConversationTrace:
    conv = conversation_row(ctx, conversation_id)
    rows = ctx.conn.execute(
        select(st).where(st.c.conversation_pk == conv.pk).order_by(st.c.pk)
    ).all()
    return ConversationTrace(
        conversation_id=conv.id,
        steps=[to_step(row, conv.id) for row in rows],
        tool_calls=_tool_calls(ctx, list(rows)),
    )


def _step_text(step: Row[Any], calls: list[ToolCall]) -> str:
    parts = [step.reasoning, step.action_taken, step.result or ""]
    for call in calls:
        parts += [call.input or "", call.output or ""]
    return "\n".join(parts).casefold()


def _names_pattern(names: list[str]) -> re.Pattern[str] | None:
    words = [re.escape(n.casefold()) for n in names if n.strip()]
    if not words:
        return None
    return re.compile(r"(?<!\w)(?:" + "|".join(words) + r")(?!\w)")


def _explain(ctx: Ctx, step: Row[Any], entity_rows: list[Row[Any]]) -> StepExplanation:
    calls = _tool_calls(ctx, [step])
    haystack = _step_text(step, calls)
    alias_names: dict[int, list[str]] = {}
    for row in entity_rows:
        owner = row.merged_into_pk if row.merged_into_pk is not None else row.pk
        alias_names.setdefault(owner, []).append(row.name)
    influenced = []
    for row in entity_rows:
        if row.merged_into_pk is not None:
            continue
        pattern = _names_pattern(alias_names.get(row.pk, [row.name]))
        if pattern is not None and pattern.search(haystack):
            influenced.append(InfluencedEntity(id=row.id, name=row.name, type=row.type))
    return StepExplanation(
        **to_step(step, step.conv_id).model_dump(),
        tool_calls=calls,
        influenced_entities=influenced,
    )


def _workspace_entities(ctx: Ctx) -> list[Any]:
    return list(
        ctx.conn.execute(
            select(e.c.pk, e.c.id, e.c.name, e.c.type, e.c.merged_into_pk)
            .where(e.c.workspace == ctx.workspace)
            .order_by(e.c.pk)
        ).all()
    )


def explain_step(ctx: Ctx, step_id: str) -> StepExplanation:
    return _explain(ctx, _step_row(ctx, step_id), _workspace_entities(ctx))


def get_provenance(ctx: Ctx, entity_id: str) -> EntityProvenance:
    """The steps (oldest first) that influenced the entity, each explained."""
    target = entity_row(ctx, entity_id)
    owner = target.merged_into_pk if target.merged_into_pk is not None else target.pk
    entities = _workspace_entities(ctx)
    steps = ctx.conn.execute(
        select(st, c.c.id.label("conv_id"))
        .join(c, c.c.pk == st.c.conversation_pk)
        .where(st.c.workspace == ctx.workspace)
        .order_by(st.c.pk)
    ).all()
    explained = [_explain(ctx, step, entities) for step in steps]
    owner_id = next(row.id for row in entities if row.pk == owner)
    return EntityProvenance(
        entity_id=target.id,
        steps=[x for x in explained if any(i.id == owner_id for i in x.influenced_entities)],
    )
