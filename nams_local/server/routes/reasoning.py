"""Reasoning memory: steps, tool calls, traces, explanations: ``/v1/reasoning/...``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path, Query

from nams_local.errors import InvalidInputError
from nams_local.models import (
    ConversationTrace,
    EntityProvenance,
    ReasoningStep,
    StepExplanation,
    ToolCall,
)

from .. import responses as R
from ..bodies import NOT_BLANK, RecordStepBody, RecordToolCallBody
from ..deps import Backend
from ..wire import trace_wire
from .base import answers, api_router

__all__ = ["router"]

router = api_router(tags=["Reasoning"])


@router.post("/reasoning/steps", status_code=201, **answers(ReasoningStep, status=201))
async def record_step(body: RecordStepBody, backend: Backend) -> dict[str, Any]:
    step = await backend.record_step(
        body.conversation_id, body.reasoning, body.action_taken, body.result
    )
    return step.to_wire()


@router.get("/reasoning/steps", **answers(R.StepList))
async def list_steps(
    backend: Backend,
    conversation_id: Annotated[
        str | None,
        Query(description="required (snake_case)", json_schema_extra={"pattern": NOT_BLANK}),
    ] = None,
    # R5: the Python SDK's spelling, accepted but not documented (the document says the
    # spec's parameter is required, see openapi.py).
    conversation_id_camel: Annotated[
        str | None, Query(alias="conversationId", include_in_schema=False)
    ] = None,
) -> dict[str, Any]:
    conversation = conversation_id if conversation_id is not None else conversation_id_camel
    if conversation is None or not conversation.strip():
        raise InvalidInputError("Missing conversation_id")
    return {"steps": [s.to_wire() for s in await backend.list_steps(conversation)]}


@router.post("/reasoning/tool-calls", status_code=201, **answers(ToolCall, status=201))
async def record_tool_call(body: RecordToolCallBody, backend: Backend) -> dict[str, Any]:
    call = await backend.record_tool_call(
        body.tool_name, body.input, body.output, body.status, body.step_id, body.duration_ms
    )
    return call.to_wire()


@router.get("/reasoning/trace/{conversationId}", **answers(ConversationTrace))
async def get_trace(
    conversation_id: Annotated[str, Path(alias="conversationId")], backend: Backend
) -> dict[str, Any]:
    return trace_wire(await backend.get_trace(conversation_id))


@router.get("/reasoning/explain/{stepId}", **answers(StepExplanation))
async def explain_step(
    step_id: Annotated[str, Path(alias="stepId")], backend: Backend
) -> dict[str, Any]:
    return (await backend.explain_step(step_id)).to_wire()


@router.get("/reasoning/provenance/{entityId}", **answers(EntityProvenance))
async def get_provenance(
    entity_id: Annotated[str, Path(alias="entityId")], backend: Backend
) -> dict[str, Any]:
    return (await backend.get_provenance(entity_id)).to_wire()
