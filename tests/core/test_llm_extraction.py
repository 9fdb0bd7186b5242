"""The model-driven extractor and summariser over a scripted chat model (no paid LLM here).

The scripted model records every request, so these tests pin what a real provider would
be sent (the §6.1 schema as ``response_format``, the message and its role) and what is
made of its answer, including the failure paths the engine's pipeline relies on.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from nams_local.extraction import SELF, Extraction, ExtractionInput, Extractor, Summariser
from nams_local.extraction.schema import EXTRACTION_SCHEMA, response_format
from nams_local.integrations import LLMExtractor, LLMSummariser, ScriptedChatModel, ScriptedReply
from nams_local.integrations.llm_extraction import normalise_entity_type


def _answer(entities: list[tuple[str, str]], relationships: list[tuple[str, str, str]]) -> str:
    return json.dumps(
        {
            "entities": [{"name": n, "type": t, "description": ""} for n, t in entities],
            "relationships": [{"from": s, "to": o, "type": r} for s, r, o in relationships],
        }
    )


async def _run(reply: str | ScriptedReply, **message: Any) -> tuple[Extraction, ScriptedChatModel]:
    model = ScriptedChatModel([reply])
    found = await LLMExtractor(model).extract(ExtractionInput(**message))
    return found, model


def test_llm_extractor_and_summariser_implement_the_protocols() -> None:
    model = ScriptedChatModel([])
    assert isinstance(LLMExtractor(model), Extractor)
    assert isinstance(LLMSummariser(model), Summariser)


async def test_request_carries_the_schema_the_role_and_the_text() -> None:
    reply = _answer([("TechCorp", "organization")], [("User", "WORKS_AT", "TechCorp")])
    _, model = await _run(reply, text="Got it, you work at TechCorp.", role="assistant")
    (call,) = model.calls
    assert call.kind == "generate"
    assert call.options["response_format"] == response_format()
    assert call.options["response_format"]["json_schema"]["schema"] is EXTRACTION_SCHEMA
    system, user = call.messages
    assert (
        system["role"] == "system" and "Do not extract entities about memory" in system["content"]
    )
    assert user["role"] == "user"
    assert user["content"].endswith(
        "Memory (chat message from the assistant): Got it, you work at TechCorp."
    )


async def test_known_user_name_and_context_are_in_the_request() -> None:
    _, model = await _run(
        _answer([], []), text="I moved again.", user_name="Alex", recent=("I live in Pune.",)
    )
    content = model.calls[0].messages[1]["content"]
    assert 'The User\'s name is "Alex".' in content
    assert "- I live in Pune." in content


async def test_answer_becomes_entities_and_relationships() -> None:
    reply = _answer(
        [
            ("Alex", "Person"),
            ("TechCorp", "Organization"),
            ("Bangalore", "place"),
            ("Neovim", "software"),
            ("User", "person"),
        ],
        [
            ("User", "WORKS_AT", "TechCorp"),
            ("I", "lives in", "Bangalore"),
            ("alex", "uses", "Neovim"),
            ("TechCorp", "LOCATED_IN", "Mars"),  # Mars is not an entity above: dropped
            ("User", "KNOWS", "User"),  # a self-loop says nothing
        ],
    )
    found, _ = await _run(reply, text="My name is Alex. I work at TechCorp ...")
    assert found.user_name == "Alex"
    assert [(e.name, e.type) for e in found.entities] == [
        ("Alex", "person"),
        ("TechCorp", "organization"),
        ("Bangalore", "location"),
        ("Neovim", "tool"),
    ]
    assert [(r.source, r.type, r.target) for r in found.relationships] == [
        (SELF, "WORKS_AT", "TechCorp"),
        (SELF, "LIVES_IN", "Bangalore"),
        (SELF, "USES", "Neovim"),
    ]


async def test_known_user_name_in_an_answer_is_the_user() -> None:
    reply = _answer(
        [("Maria", "person"), ("Lisbon", "location")], [("Maria", "LIVES_IN", "Lisbon")]
    )
    found, _ = await _run(reply, text="I live in Lisbon now.", user_name="Maria")
    assert found.user_name is None  # this message does not state the name
    assert [(r.source, r.type, r.target) for r in found.relationships] == [
        (SELF, "LIVES_IN", "Lisbon")
    ]


async def test_fenced_answer_with_confidence_is_accepted() -> None:
    body = {
        "entities": [
            {"name": "Rust", "type": "tool", "description": "a language", "confidence": 1.7}
        ],
        "relationships": [],
    }
    found, _ = await _run(f"```json\n{json.dumps(body)}\n```", text="Rust is great")
    (entity,) = found.entities
    assert (entity.name, entity.description, entity.confidence) == ("Rust", "a language", 1.0)


@pytest.mark.parametrize(
    "reply",
    [
        "I think the user works at TechCorp.",  # not JSON
        json.dumps({"entities": [{"name": "X", "type": "tool"}], "relationships": []}),
        json.dumps({"entities": [], "relationships": [], "summary": "extra field"}),
        ScriptedReply(text=None),
    ],
)
async def test_an_answer_off_the_schema_raises(reply: str | ScriptedReply) -> None:
    with pytest.raises(ValueError):
        await _run(reply, text="I work at TechCorp.")


async def test_a_model_error_propagates() -> None:
    with pytest.raises(TimeoutError):
        await _run(ScriptedReply(error=TimeoutError("slow")), text="hello")


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("Place", "location"),
        ("organisation", "organization"),
        (" Person ", "person"),
        ("event", "event"),
        ("Framework", "tool"),
        ("mood", "concept"),
    ],
)
def test_entity_types_are_normalised(given: str, expected: str) -> None:
    assert normalise_entity_type(given) == expected


# -- summaries -----------------------------------------------------------------------------
async def test_observe_sends_the_turns_and_returns_the_text() -> None:
    model = ScriptedChatModel(["  The user works at TechCorp in Bangalore.  "])
    text = await LLMSummariser(model).observe(
        [("user", "I work at TechCorp."), ("assistant", "Noted, Bangalore office?")]
    )
    assert text == "The user works at TechCorp in Bangalore."
    system, user = model.calls[0].messages
    assert "observation" in system["content"]
    assert user["content"] == "User: I work at TechCorp.\nAssistant: Noted, Bangalore office?"
    assert "response_format" not in model.calls[0].options


async def test_reflect_sends_the_previous_reflection_and_observations() -> None:
    model = ScriptedChatModel(["The user lives in Bangalore.", "Still Bangalore."])
    summariser = LLMSummariser(model, reflection_prompt="Merge these.")
    first = await summariser.reflect(["The user moved to Bangalore."], None)
    await summariser.reflect(["Nothing new."], first)
    assert model.calls[0].messages[0]["content"] == "Merge these."
    assert model.calls[0].messages[1]["content"] == (
        "Previous reflection: (none yet)\n\nNew observations:\n- The user moved to Bangalore."
    )
    assert (
        model.calls[1]
        .messages[1]["content"]
        .startswith("Previous reflection: The user lives in Bangalore.")
    )


async def test_an_empty_summary_raises() -> None:
    with pytest.raises(ValueError, match="no summary"):
        await LLMSummariser(ScriptedChatModel(["   "])).observe([("user", "hi")])
