"""Reasoning: steps, tool calls, traces, explanations and entity provenance."""

from __future__ import annotations

import pytest

from nams_local.backend import MemoryBackend
from nams_local.errors import InvalidInputError
from nams_local.models import ToolCallStatus

from .support import ids, tick


async def test_record_step_round_trips(backend: MemoryBackend) -> None:
    conversation = await backend.create_conversation()

    step = await backend.record_step(
        conversation.id, "The user asked for the time", "call clock", "12:00"
    )

    assert step.id
    assert step.conversation_id == conversation.id
    assert (step.reasoning, step.action_taken, step.result) == (
        "The user asked for the time",
        "call clock",
        "12:00",
    )
    (listed,) = await backend.list_steps(conversation.id)
    assert listed.id == step.id
    assert (listed.reasoning, listed.action_taken, listed.result) == (
        "The user asked for the time",
        "call clock",
        "12:00",
    )
    assert listed.created_at is not None


async def test_step_result_is_optional(backend: MemoryBackend) -> None:
    conversation = await backend.create_conversation()

    step = await backend.record_step(conversation.id, "thinking", "acting")

    (listed,) = await backend.list_steps(conversation.id)
    assert listed.id == step.id
    assert not listed.result


async def test_list_steps_in_recorded_order(backend: MemoryBackend) -> None:
    conversation = await backend.create_conversation()
    other = await backend.create_conversation()
    steps = []
    for i in range(4):
        steps.append(await backend.record_step(conversation.id, f"reason {i}", f"action {i}"))
        await backend.record_step(other.id, f"elsewhere {i}", "noise")

    listed = await backend.list_steps(conversation.id)

    assert ids(listed) == ids(steps)
    assert [s.reasoning for s in listed] == [f"reason {i}" for i in range(4)]


async def test_tool_call_defaults_to_success(backend: MemoryBackend) -> None:
    conversation = await backend.create_conversation()
    step = await backend.record_step(conversation.id, "need data", "search")

    call = await backend.record_tool_call(
        "web_search", '{"q": "weather"}', '{"temp": 21}', step_id=step.id, duration_ms=120
    )

    assert call.id
    assert (call.tool_name, call.step_id, call.status) == (
        "web_search",
        step.id,
        ToolCallStatus.SUCCESS,
    )
    (stored,) = (await backend.explain_step(step.id)).tool_calls
    assert stored.id == call.id
    assert (stored.tool_name, stored.input, stored.output) == (
        "web_search",
        '{"q": "weather"}',
        '{"temp": 21}',
    )
    assert stored.status == ToolCallStatus.SUCCESS
    assert stored.step_id == step.id
    assert stored.duration_ms == 120


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("completed", ToolCallStatus.SUCCESS),
        ("failed", ToolCallStatus.FAILURE),
        ("success", ToolCallStatus.SUCCESS),
        ("pending", ToolCallStatus.PENDING),
        ("failure", ToolCallStatus.FAILURE),
        ("error", ToolCallStatus.ERROR),
        ("timeout", ToolCallStatus.TIMEOUT),
        ("cancelled", ToolCallStatus.CANCELLED),
        (ToolCallStatus.TIMEOUT, ToolCallStatus.TIMEOUT),
    ],
)
async def test_tool_call_statuses(
    backend: MemoryBackend, given: str | ToolCallStatus, expected: ToolCallStatus
) -> None:
    conversation = await backend.create_conversation()
    step = await backend.record_step(conversation.id, "try", "call")

    call = await backend.record_tool_call("tool", "{}", "{}", status=given, step_id=step.id)

    assert call.status == expected
    (stored,) = (await backend.get_trace(conversation.id)).tool_calls
    assert (stored.id, stored.status) == (call.id, expected)


async def test_invalid_tool_call_status_is_refused(backend: MemoryBackend) -> None:
    conversation = await backend.create_conversation()
    step = await backend.record_step(conversation.id, "try", "call")

    with pytest.raises(InvalidInputError):
        await backend.record_tool_call("tool", "{}", status="exploded", step_id=step.id)

    assert (await backend.explain_step(step.id)).tool_calls == []
    assert (await backend.get_trace(conversation.id)).tool_calls == []


async def test_orphan_tool_call_is_allowed(backend: MemoryBackend) -> None:
    conversation = await backend.create_conversation()
    step = await backend.record_step(conversation.id, "unrelated step", "noop")

    call = await backend.record_tool_call("calculator", '{"expr": "1+1"}', "2")

    assert call.id
    assert call.step_id is None
    assert call.tool_name == "calculator"
    assert call.status == ToolCallStatus.SUCCESS
    assert (await backend.explain_step(step.id)).tool_calls == []
    assert call.id not in ids((await backend.get_trace(conversation.id)).tool_calls)


async def test_trace_has_ordered_steps_and_flat_tool_calls(backend: MemoryBackend) -> None:
    conversation = await backend.create_conversation()
    other = await backend.create_conversation()
    first = await backend.record_step(conversation.id, "first thought", "look up")
    call_1 = await backend.record_tool_call("lookup", '{"n": 1}', "one", step_id=first.id)
    await tick()
    second = await backend.record_step(conversation.id, "second thought", "compute", "done")
    call_2 = await backend.record_tool_call("compute", '{"n": 2}', "two", step_id=second.id)
    call_3 = await backend.record_tool_call(
        "compute", '{"n": 3}', status="failed", step_id=second.id
    )
    foreign = await backend.record_step(other.id, "not this one", "skip")
    await backend.record_tool_call("lookup", "{}", step_id=foreign.id)

    trace = await backend.get_trace(conversation.id)

    assert trace.conversation_id == conversation.id
    assert ids(trace.steps) == [first.id, second.id]
    assert [s.reasoning for s in trace.steps] == ["first thought", "second thought"]
    by_step = {(c.step_id, c.id) for c in trace.tool_calls}
    assert by_step == {(first.id, call_1.id), (second.id, call_2.id), (second.id, call_3.id)}
    statuses = {c.id: c.status for c in trace.tool_calls}
    assert statuses[call_3.id] == ToolCallStatus.FAILURE


async def test_trace_of_conversation_without_steps_is_empty(backend: MemoryBackend) -> None:
    conversation = await backend.create_conversation()

    trace = await backend.get_trace(conversation.id)

    assert trace.conversation_id == conversation.id
    assert trace.steps == []
    assert trace.tool_calls == []


async def test_explain_step_lists_tool_calls_and_influenced_entities(
    backend: MemoryBackend,
) -> None:
    paris = await backend.add_entity("Paris", "location")
    berlin = await backend.add_entity("Berlin", "location")
    eiffel = await backend.add_entity("Eiffel Tower", "place")
    tokyo = await backend.add_entity("Tokyo", "location")
    conversation = await backend.create_conversation()
    step = await backend.record_step(
        conversation.id, "The user wants the weather in Paris", "call weather api", "sunny"
    )
    call = await backend.record_tool_call(
        "weather", '{"city": "Berlin"}', '{"note": "near the Eiffel Tower"}', step_id=step.id
    )
    other_step = await backend.record_step(conversation.id, "nothing relevant", "wait")

    explanation = await backend.explain_step(step.id)

    assert explanation.id == step.id
    assert explanation.conversation_id == conversation.id
    assert (explanation.reasoning, explanation.action_taken, explanation.result) == (
        "The user wants the weather in Paris",
        "call weather api",
        "sunny",
    )
    assert ids(explanation.tool_calls) == [call.id]
    influenced = {e.id: (e.name, e.type) for e in explanation.influenced_entities}
    assert influenced == {
        paris.id: ("Paris", "location"),
        berlin.id: ("Berlin", "location"),
        eiffel.id: ("Eiffel Tower", "place"),
    }
    assert tokyo.id not in influenced
    other = await backend.explain_step(other_step.id)
    assert other.tool_calls == []
    assert other.influenced_entities == []


async def test_provenance_lists_the_steps_that_touched_an_entity(backend: MemoryBackend) -> None:
    paris = await backend.add_entity("Paris", "location")
    tokyo = await backend.add_entity("Tokyo", "location")
    conversation = await backend.create_conversation()
    by_reasoning = await backend.record_step(conversation.id, "Flights to Paris?", "search")
    by_tool = await backend.record_step(conversation.id, "Check hotels", "book")
    call = await backend.record_tool_call("hotels", '{"city": "Paris"}', step_id=by_tool.id)
    await backend.record_step(conversation.id, "Unrelated", "idle")

    provenance = await backend.get_provenance(paris.id)

    assert provenance.entity_id == paris.id
    assert set(ids(provenance.steps)) == {by_reasoning.id, by_tool.id}
    tool_step = next(s for s in provenance.steps if s.id == by_tool.id)
    assert ids(tool_step.tool_calls) == [call.id]
    untouched = await backend.get_provenance(tokyo.id)
    assert untouched.entity_id == tokyo.id
    assert untouched.steps == []


async def test_deleted_entity_no_longer_influences_steps(backend: MemoryBackend) -> None:
    paris = await backend.add_entity("Paris", "location")
    rome = await backend.add_entity("Rome", "location")
    conversation = await backend.create_conversation()
    step = await backend.record_step(conversation.id, "Paris or Rome?", "compare")

    await backend.delete_entity(paris.id)

    explanation = await backend.explain_step(step.id)
    assert [e.id for e in explanation.influenced_entities] == [rome.id]
    assert ids((await backend.get_provenance(rome.id)).steps) == [step.id]
