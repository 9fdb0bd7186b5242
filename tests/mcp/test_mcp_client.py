"""Provider-behavior §5.6: ``tools_with_mcp`` against a real MCP server on loopback."""

from __future__ import annotations

import json
import socket

import pytest

from backends.sqlite import SQLiteBackend
from nams_local.integrations import (
    McpConfig,
    NamsMcpConnectionError,
    ScriptedChatModel,
    ScriptedReply,
    ToolCallRequest,
    ToolLoop,
    create_nams,
    ensure_memory_stored,
)
from tests.recording_logger import RecordingLogger

from .weather import CHALLENGE, TOKEN, WeatherServer

SCOPE = {"user_id": "alex"}


async def test_loop_calls_an_mcp_tool_next_to_the_memory_tools(
    engine: SQLiteBackend, logger: RecordingLogger, weather_server: WeatherServer
) -> None:
    nams = create_nams(engine, logger=logger)
    model = ScriptedChatModel(
        [
            ScriptedReply(
                tool_calls=[
                    ToolCallRequest("c1", "query_memory", '{"query": "Delhi"}'),
                    ToolCallRequest("c2", "wx_get_weather", '{"city": "Delhi"}'),
                ]
            ),
            ScriptedReply(
                tool_calls=[
                    ToolCallRequest(
                        "c3", "store_memory", '{"content": "Alex lives in Delhi", "type": "fact"}'
                    )
                ]
            ),
            ScriptedReply(text="It is sunny in Delhi."),
        ]
    )
    async with nams.tools_with_mcp(SCOPE, McpConfig(weather_server.url, tool_prefix="wx_")) as t:
        assert t.mcp is not None and t.mcp.connected
        assert t.mcp.tool_names == ["wx_get_weather", "wx_query_memory"]
        assert list(t.tools) == [
            "query_memory",
            "store_memory",
            "wx_get_weather",
            "wx_query_memory",
        ]
        result = await ToolLoop(model, t.tools).run("Weather where I live?")
        # The merged set is still bound to the memory client.
        finished = await ensure_memory_stored(t.tools)(result)

    assert result.text == "It is sunny in Delhi."
    outputs = {r.tool_name: r.output for r in result.tool_results}
    assert outputs["wx_get_weather"]["isError"] is False
    assert outputs["wx_get_weather"]["content"] == [{"type": "text", "text": "sunny in Delhi"}]
    assert outputs["query_memory"]["found"] is False
    assert outputs["store_memory"]["stored"] is True
    assert finished == {"stored": False, "reason": "already-stored"}
    sent = {tool["function"]["name"]: tool["function"] for tool in model.calls[0].tools or []}
    assert sent["wx_get_weather"]["parameters"]["properties"]["city"]["type"] == "string"
    assert sent["wx_get_weather"]["description"] == "The current weather in a city."
    assert [e.name for e in await engine.list_entities()] == ["Alex lives in Delhi"]
    assert logger.records == []


async def test_a_clashing_name_overrides_the_memory_tool_with_a_warning(
    engine: SQLiteBackend, logger: RecordingLogger, weather_server: WeatherServer
) -> None:
    nams = create_nams(engine, logger=logger)
    async with nams.tools_with_mcp(SCOPE, McpConfig(weather_server.url)) as t:
        output = await t.tools["query_memory"].run({"query": "Delhi"})
    assert output["content"] == [{"type": "text", "text": "remote memory for Delhi"}]
    assert logger.warnings == [
        "MCP tool(s) [query_memory] share a name with NAMS memory tools and will override "
        "them — set mcp.toolPrefix to namespace MCP tools and avoid this"
    ]


async def test_optional_server_down_degrades_to_memory_tools(
    engine: SQLiteBackend, logger: RecordingLogger, closed_port_url: str
) -> None:
    nams = create_nams(engine, logger=logger)
    t = await nams.tools_with_mcp(SCOPE, McpConfig(closed_port_url, optional=True))
    assert list(t.tools) == ["query_memory", "store_memory"]
    assert t.mcp is not None and not t.mcp.connected and t.mcp.tool_names == []
    assert isinstance(t.mcp.error, NamsMcpConnectionError)
    assert t.mcp.error.status is None
    assert logger.warnings == [
        f"MCP connection to {closed_port_url} failed: All connection attempts failed"
        " — continuing with NAMS memory tools only"
    ]
    stored = await t.tools["store_memory"].run({"content": "likes tea", "type": "interaction"})
    assert stored["stored"] is True
    await t.close()


async def test_a_server_that_never_answers_times_out(
    engine: SQLiteBackend, logger: RecordingLogger
) -> None:
    with socket.socket() as silent:  # accepts connections (backlog) but never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/mcp"
        nams = create_nams(engine, logger=logger)
        t = await nams.tools_with_mcp(SCOPE, McpConfig(url, optional=True, timeout=0.2))
    assert list(t.tools) == ["query_memory", "store_memory"]
    assert logger.warnings == [
        f"MCP connection to {url} failed: no answer within 0.2s"
        " — continuing with NAMS memory tools only"
    ]


async def test_required_server_down_raises(
    engine: SQLiteBackend, logger: RecordingLogger, closed_port_url: str
) -> None:
    nams = create_nams(engine, logger=logger)
    with pytest.raises(NamsMcpConnectionError) as raised:
        await nams.tools_with_mcp(SCOPE, McpConfig(closed_port_url))
    assert raised.value.url == closed_port_url
    assert str(raised.value).startswith(f"MCP connection to {closed_port_url} failed: ")
    assert logger.records == []


async def test_a_401_reports_the_authentication_challenge(
    engine: SQLiteBackend, logger: RecordingLogger, weather_server: WeatherServer
) -> None:
    nams = create_nams(engine, logger=logger)
    with pytest.raises(NamsMcpConnectionError) as raised:
        await nams.tools_with_mcp(SCOPE, McpConfig(weather_server.secure_url))
    error = raised.value
    assert (error.status, error.www_authenticate) == (401, CHALLENGE)
    assert str(error) == (
        f"MCP connection to {weather_server.secure_url} failed (HTTP 401). The server "
        "requires Bearer authentication — supply a matching Authorization header via "
        f"mcp.headers. Challenge: {CHALLENGE}"
    )


async def test_headers_function_is_evaluated_once_and_authenticates(
    engine: SQLiteBackend, logger: RecordingLogger, weather_server: WeatherServer
) -> None:
    calls: list[int] = []

    async def headers() -> dict[str, str]:
        calls.append(1)
        return {"Authorization": f"Bearer {TOKEN}"}

    nams = create_nams(engine, logger=logger)
    config = McpConfig(weather_server.secure_url, headers=headers, tool_prefix="wx_")
    async with nams.tools_with_mcp(SCOPE, config) as t:
        first = await t.tools["wx_get_weather"].run({"city": "Pune"})
        second = await t.tools["wx_get_weather"].run({"city": "Goa"})
    assert json.dumps(first["content"]) == '[{"type": "text", "text": "sunny in Pune"}]'
    assert second["content"][0]["text"] == "sunny in Goa"
    assert calls == [1]


async def test_without_mcp_config_only_memory_tools_and_closed_session_fails(
    engine: SQLiteBackend, logger: RecordingLogger, weather_server: WeatherServer
) -> None:
    nams = create_nams(engine, logger=logger)
    plain = await nams.tools_with_mcp(SCOPE)
    assert list(plain.tools) == ["query_memory", "store_memory"] and plain.mcp is None
    await plain.close()

    t = await nams.tools_with_mcp(SCOPE, McpConfig(weather_server.url, tool_prefix="wx_"))
    await t.close()
    await t.close()  # idempotent
    with pytest.raises(RuntimeError, match="is closed"):
        await t.tools["wx_get_weather"].run({"city": "Delhi"})
