"""Hostile tool arguments to the memory MCP server: a tool error, never a crash.

Every tool of ``create_mcp_server`` gets arguments of wrong JSON types, out-of-range and
huge numbers, ``NaN``, empty, huge and odd strings, unknown ids, unknown keys and deep
values, through a real MCP client session (in process). Each call must come back as a
``CallToolResult`` — an error result (``isError``) with a message, or a result — the
session must keep answering afterwards, and a refused call must write nothing.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from backends.sqlite import SQLiteBackend
from nams_local.integrations.mcp_server import create_mcp_server

UNKNOWN_ID = "00000000-0000-4000-8000-000000000000"
DEEP: Any = {"a": [[[[{"b": [[[[{"c": None}]]]]}]]]]}
HOSTILE: list[Any] = [
    None,
    True,
    0,
    -1,
    2**63,
    10**30,
    1.5,
    float("nan"),
    float("inf"),
    "",
    " ",
    "\x00",
    "ünïcødé — 😀 \u202e",
    "x" * 100_000,
    '*"()^:NEAR AND OR NOT',
    "'; DROP TABLE entities; --",
    UNKNOWN_ID,
    [],
    ["x"],
    {},
    DEEP,
]
VALID: dict[str, dict[str, Any]] = {
    "query_memory": {"query": "Delhi", "limit": 3},
    "store_memory": {"content": "Alex lives in Delhi", "type": "fact", "confidence": 0.9},
    "list_entities": {"type": "fact"},
    "get_entity": {"entity_id": UNKNOWN_ID},
    "search_entities": {"query": "Delhi", "type": "fact", "limit": 3},
    "get_graph": {},
    "get_entity_neighbourhood": {"entity_id": UNKNOWN_ID, "depth": 1},
}


async def _counts(engine: SQLiteBackend) -> tuple[int, int, int]:
    conversations = await engine.list_conversations()
    messages = 0
    for conversation in conversations:
        messages += len(await engine.list_messages(conversation.id))
    return len(await engine.list_entities()), len(conversations), messages


def _variants() -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = [("no_such_tool", {}), ("get_entity", {})]
    for tool, valid in VALID.items():
        out.append((tool, {**valid, "unknown_key": DEEP}))
        for name in valid:
            out.append((tool, {k: v for k, v in valid.items() if k != name}))
            out.extend((tool, {**valid, name: value}) for value in HOSTILE)
    return out


async def _call_checked(client: Client, engine: SQLiteBackend, tool: str, arguments: Any) -> Any:
    before = await _counts(engine)
    result = await client.call_tool(tool, arguments)
    label = (tool, repr(arguments)[:200], result.content[:1])
    assert result.content and result.content[0].type == "text", label
    if result.is_error:
        assert result.content[0].text.strip(), label  # a message, not an empty error
        assert await _counts(engine) == before, ("a refused call wrote", *label)
    return result


async def test_hostile_arguments_give_tool_errors_and_write_nothing(
    engine: SQLiteBackend,
) -> None:
    async with Client(create_mcp_server(engine, user_id="alex")) as client:
        for tool, arguments in _variants():
            await _call_checked(client, engine, tool, arguments)
        # the session still serves, and a good call still works after all that
        stored = await client.call_tool("store_memory", VALID["store_memory"])
        assert stored.is_error is False, stored.content
        listed = await client.call_tool("list_entities", {})
        assert listed.is_error is False and listed.structured_content is not None
        assert any(
            e["name"] == "Alex lives in Delhi" for e in listed.structured_content["entities"]
        )


async def test_the_valid_arguments_cover_every_tool_and_each_is_accepted(
    engine: SQLiteBackend,
) -> None:
    """The hostile variants change one argument of arguments the tool takes (else they
    would only ever test the same refusal), and a tool added later must be added here."""
    async with Client(create_mcp_server(engine, user_id="alex")) as client:
        listed = {t.name for t in (await client.list_tools()).tools}
        await client.call_tool("store_memory", VALID["store_memory"])
        (entity,) = await engine.list_entities()
        for tool, arguments in VALID.items():
            if "entity_id" in arguments:
                arguments = {**arguments, "entity_id": entity.id}
            result = await client.call_tool(tool, arguments)
            assert result.is_error is False, (tool, result.content)
    assert listed == set(VALID)


ARGS = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=50),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)


@settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    tool=st.sampled_from(sorted(VALID)),
    changes=st.dictionaries(
        st.sampled_from(["query", "content", "type", "limit", "entity_id", "depth", "x"]),
        ARGS,
        max_size=3,
    ),
)
async def test_property_any_arguments_give_a_result_or_a_tool_error(
    engine: SQLiteBackend, tool: str, changes: dict[str, Any]
) -> None:
    async with Client(create_mcp_server(engine, user_id="alex")) as client:
        await _call_checked(client, engine, tool, {**VALID[tool], **changes})
