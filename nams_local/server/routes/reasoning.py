"""Reasoning memory: steps, tool calls, traces, explanations: ``/v1/reasoning/...``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path, Query

from nams_local.errors import InvalidInputError

from ..bodies import RecordStepBody, RecordToolCallBody
from ..deps import Backend
from ..wire import trace_wire
from .base import api_router

__all__ = ["router"]

router = api_router(tags=["Reasoning"])


@router.post("/reasoning/steps", status_code=201)
async def record_step(body: RecordStepBody, backend: Backend) -> dict[str, Any]:
    step = await backend.record_step(
        body.conversation_id, body.reasoning, body.action_taken, body.result
    )
    return step.to_wire()


@router.get("/reasoning/steps")
async def list_steps(
    backend: Backend,
    conversation_id: Annotated[str | None, Query(description="required (snake_case)")] = None,
    conversation_id_camel: Annotated[str | None, Query(alias="conversationId")] = None,
) -> dict[str, Any]:
    conversation = conversation_id if conversation_id is not None else conversation_id_camel
    if conversation is None or not conversation.strip():
        raise InvalidInputError("Missing conversation_id")
    return {"steps": [s.to_wire() for s in await backend.list_steps(conversation)]}


@router.post("/reasoning/tool-calls", status_code=201)
async def record_tool_call(body: RecordToolCallBody, backend: Backend) -> dict[str, Any]:
    call = await backend.record_tool_call(
        body.tool_name, body.input, body.output, body.status, body.step_id, body.duration_ms
    )
    return call.to_wire()


@router.get("/reasoning/trace/{conversationId}")
async def get_trace(
    conversation_id: Annotated[str, Path(alias="conversationId")], backend: Backend
) -> dict[str, Any]:
    return trace_wire(await backend.get_trace(conversation_id))


@router.get("/reasoning/explain/{stepId}")
async def explain_step(
    step_id: Annotated[str, Path(alias="stepId")], backend: Backend
) -> dict[str, Any]:
    return (await backend.explain_step(step_id)).to_wire()


@router.get("/reasoning/provenance/{entityId}")
async def get_provenance(
    entity_id: Annotated[str, Path(alias="entityId")], backend: Backend
) -> dict[str, Any]:
    return (await backend.get_provenance(entity_id)).to_wire()
