"""The models read hosted responses (camelCase, SDK spellings) and write camelCase."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from nams_local import (
    Conversation,
    EntityDetails,
    Message,
    ReasoningStep,
    SearchResult,
    ToolCall,
    ToolCallStatus,
)


def test_hosted_entity_details_with_rel_type() -> None:
    details = EntityDetails.model_validate(
        {
            "id": "e1",
            "name": "Alex",
            "type": "person",
            "sourceStage": "extraction",
            "createdAt": "2026-06-10T12:00:00Z",
            "confidence": 0.9,
            "relationships": [
                {"relType": "WORKS_AT", "targetId": "e2", "targetName": "TechCorp"},
                {"type": "LIVES_IN", "target_id": "e3", "target_name": "Bangalore"},
            ],
        }
    )
    assert details.source_stage == "extraction"
    assert details.created_at is not None and details.created_at.year == 2026
    assert [(r.type, r.target_id, r.target_name) for r in details.relationships] == [
        ("WORKS_AT", "e2", "TechCorp"),
        ("LIVES_IN", "e3", "Bangalore"),
    ]
    assert details.relationships[0].direction is None


def test_either_casing_is_accepted_and_camel_case_is_written() -> None:
    snake = ReasoningStep.model_validate(
        {"id": "s1", "reasoning": "r", "action_taken": "direct response"}
    )
    camel = ReasoningStep.model_validate(
        {"id": "s1", "reasoning": "r", "actionTaken": "direct response"}
    )
    assert snake == camel
    wire = Conversation(id="c1", user_id="u", message_count=2).to_wire()
    assert wire == {"id": "c1", "userId": "u", "metadata": {}, "messageCount": 2}


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        (None, ToolCallStatus.SUCCESS),
        ("completed", ToolCallStatus.SUCCESS),
        ("failed", ToolCallStatus.FAILURE),
        ("TIMEOUT", ToolCallStatus.TIMEOUT),
        ("cancelled", ToolCallStatus.CANCELLED),
    ],
)
def test_tool_call_status_legacy_names(given: str | None, stored: ToolCallStatus) -> None:
    call = ToolCall.model_validate({"id": "t", "toolName": "web_search", "status": given})
    assert call.status is stored
    assert call.to_wire()["status"] == stored.value


def test_unknown_tool_call_status_is_refused() -> None:
    with pytest.raises(ValidationError):
        ToolCall.model_validate({"id": "t", "toolName": "x", "status": "exploded"})


def test_search_result_keeps_items_and_search_type() -> None:
    result = SearchResult[Message].model_validate(
        {
            "items": [{"id": "m1", "role": "user", "content": "hi", "score": 0.5}],
            "searchType": "vector",
        }
    )
    assert result.search_type == "vector"
    assert result.items[0].score == 0.5
