"""Reasoning routes (``/reasoning/...``) and read-only Cypher (``/query``)."""

from __future__ import annotations

from typing import Any

from nams_local.models import (
    ConversationTrace,
    EntityProvenance,
    QueryResult,
    ReasoningStep,
    StepExplanation,
    ToolCall,
    ToolCallStatus,
)
from nams_local.validation import check_json_depth, check_required, check_tool_call

from .base import HostedBase
from .parse import envelope, lenient
from .rest import compact, segment
from .shapes import read_provenance, read_trace

__all__ = ["ReasoningRoutes"]


class ReasoningRoutes(HostedBase):
    async def record_step(
        self,
        conversation_id: str,
        reasoning: str,
        action_taken: str,
        result: str | None = None,
    ) -> ReasoningStep:
        check_required(reasoning, "reasoning")
        check_required(action_taken, "action_taken")
        segment(conversation_id)
        body = await self._rest.call(
            "POST",
            "/reasoning/steps",
            body=compact(
                {
                    "conversationId": conversation_id,
                    "reasoning": reasoning,
                    "actionTaken": action_taken,
                    "result": result,
                }
            ),
        )
        return lenient(
            ReasoningStep,
            body,
            conversation_id=conversation_id,
            reasoning=reasoning,
            action_taken=action_taken,
            result=result,
        )

    async def list_steps(self, conversation_id: str) -> list[ReasoningStep]:
        segment(conversation_id)  # a blank id is unknown, not "missing conversation_id"
        body = await self._rest.call(
            "GET", "/reasoning/steps", params={"conversation_id": conversation_id}
        )
        return [
            lenient(ReasoningStep, raw, conversation_id=conversation_id)
            for raw in envelope(body, "steps")
        ]

    async def record_tool_call(
        self,
        tool_name: str,
        input: str,
        output: str | None = None,
        status: ToolCallStatus | str | None = None,
        step_id: str | None = None,
        duration_ms: int | None = None,
    ) -> ToolCall:
        """Legacy statuses (``completed``/``failed``) are rewritten before sending, so the
        body always carries a status of the hosted enum."""
        check_required(tool_name, "tool_name")
        parsed = check_tool_call(input, status, duration_ms)
        sent = {
            "tool_name": tool_name,
            "input": input,
            "output": output,
            "status": parsed.value if status is not None else None,
            "step_id": step_id,
            "duration_ms": duration_ms,
        }
        body = await self._rest.call(
            "POST",
            "/reasoning/tool-calls",
            body=compact(
                {
                    "toolName": tool_name,
                    "input": input,
                    "output": output,
                    "status": sent["status"],
                    "stepId": step_id,
                    "durationMs": duration_ms,
                }
            ),
        )
        return lenient(ToolCall, body, **compact(sent))

    async def get_trace(self, conversation_id: str) -> ConversationTrace:
        body = await self._rest.call("GET", f"/reasoning/trace/{segment(conversation_id)}")
        return read_trace(body, conversation_id)

    async def explain_step(self, step_id: str) -> StepExplanation:
        body = await self._rest.call("GET", f"/reasoning/explain/{segment(step_id)}")
        return lenient(StepExplanation, body, id=step_id)

    async def get_provenance(self, entity_id: str) -> EntityProvenance:
        body = await self._rest.call("GET", f"/reasoning/provenance/{segment(entity_id)}")
        return read_provenance(body, entity_id)

    async def query(self, cypher: str, params: dict[str, Any] | None = None) -> QueryResult:
        """Read-only Cypher; a server without it answers 501 (``NotSupportedError``)."""
        check_required(cypher, "cypher")
        check_json_depth(params, "params")
        body = await self._rest.call(
            "POST", "/query", body=compact({"cypher": cypher, "params": params})
        )
        return lenient(QueryResult, body)
