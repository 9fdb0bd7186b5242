"""``nams-local mcp``: memory served as MCP tools, to a real MCP client session.

In-process for the tool semantics, then the real command over stdio and over streamable
HTTP, each checked against the database file it wrote.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from backends.sqlite import SQLiteBackend
from nams_local.integrations import create_nams
from nams_local.integrations.mcp_server import create_mcp_server
from nams_local.integrations.memory_tools import QUERY_MEMORY_DESCRIPTION, STORE_MEMORY_DESCRIPTION

_BANNER = re.compile(r"serving (http://127\.0\.0\.1:\d+/mcp)")


def _structured(result: Any) -> Any:
    assert result.is_error is False, result.content
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


async def _store_and_query(client: Client) -> tuple[Any, Any]:
    stored = await client.call_tool(
        "store_memory", {"content": "Alex lives in Delhi", "type": "fact", "confidence": 0.9}
    )
    found = await client.call_tool("query_memory", {"query": "Delhi"})
    return _structured(stored), _structured(found)


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "HF_HUB_OFFLINE": "1",
        "NAMS_BACKEND": "local",
    }


async def test_in_process_server_lists_exact_tools_and_reads_the_graph(
    engine: SQLiteBackend,
) -> None:
    memory_tools = create_nams(engine).tools({"user_id": "alex"})
    async with Client(create_mcp_server(engine, user_id="alex")) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        stored, found = await _store_and_query(client)
        entities = _structured(await client.call_tool("list_entities", {}))["entities"]
        search = _structured(await client.call_tool("search_entities", {"query": "Delhi"}))
        entity = _structured(await client.call_tool("get_entity", {"entity_id": entities[0]["id"]}))
        graph = _structured(await client.call_tool("get_graph", {}))
        around = _structured(
            await client.call_tool("get_entity_neighbourhood", {"entity_id": entities[0]["id"]})
        )
        missing = await client.call_tool("get_entity", {"entity_id": "no-such-id"})
        invalid = await client.call_tool("store_memory", {"content": "", "type": "fact"})

    assert list(listed) == [
        "query_memory",
        "store_memory",
        "list_entities",
        "get_entity",
        "search_entities",
        "get_graph",
        "get_entity_neighbourhood",
    ]
    assert listed["query_memory"].description == QUERY_MEMORY_DESCRIPTION
    assert listed["store_memory"].description == STORE_MEMORY_DESCRIPTION
    assert listed["store_memory"].input_schema == memory_tools["store_memory"].parameters
    assert stored == {
        "stored": True,
        "type": "fact",
        "preview": "Alex lives in Delhi",
        "message": "Memory stored (fact, confidence=0.9)",
    }
    assert found["found"] is True
    assert any("Alex lives in Delhi" in json.dumps(m) for m in found["memories"])
    assert [e["name"] for e in entities] == ["Alex lives in Delhi"]
    assert [e["name"] for e in search["entities"]] == ["Alex lives in Delhi"]
    assert entity["id"] == entities[0]["id"] and entity["relationships"] == []
    assert [n["id"] for n in graph["nodes"]] == [entities[0]["id"]]
    assert [n["id"] for n in around["nodes"]] == [entities[0]["id"]]
    assert missing.is_error is True
    assert invalid.is_error is True
    assert len(await engine.list_entities()) == 1  # the invalid store wrote nothing


async def test_stdio_session_against_the_cli_stores_and_queries(tmp_path: Path) -> None:
    db = tmp_path / "mcp.db"
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "nams_local.cli",
            "mcp",
            "--db",
            str(db),
            "--no-embeddings",
            "--user-id",
            "alex",
        ],
        env=_env(tmp_path),
    )
    async with Client(params) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        stored, found = await _store_and_query(client)
    assert names[:2] == ["query_memory", "store_memory"]
    assert stored["stored"] is True
    assert found["found"] is True and found["count"] >= 1

    async with SQLiteBackend(str(db), embeddings=False) as backend:
        assert [e.name for e in await backend.list_entities()] == ["Alex lives in Delhi"]
        assert [c.user_id for c in await backend.list_conversations()] == ["alex"]


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    db = tmp_path / "http.db"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nams_local.cli",
            "mcp",
            "--transport",
            "http",
            "--port",
            "0",
            "--db",
            str(db),
            "--no-embeddings",
            "--user-id",
            "sam",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(tmp_path),
    )
    lines: list[str] = []
    assert process.stdout is not None
    reader = threading.Thread(target=lambda: lines.append(process.stdout.readline()))  # type: ignore[union-attr]
    reader.start()
    reader.join(timeout=60)  # the banner is printed once the socket listens
    try:
        match = _BANNER.search(lines[0] if lines else "")
        if match is None:
            process.kill()
            raise AssertionError(f"no banner; stderr:\n{process.communicate(timeout=10)[1]}")
        yield match.group(1), db
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=30)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


async def test_streamable_http_session_against_the_cli(http_server: tuple[str, Path]) -> None:
    url, db = http_server
    async with Client(url) as client:
        stored, _ = await _store_and_query(client)
    async with Client(url) as client:  # a second session sees the first one's memory
        found = _structured(await client.call_tool("query_memory", {"query": "Delhi"}))
    assert stored["stored"] is True
    assert found["found"] is True
    async with SQLiteBackend(str(db), embeddings=False) as backend:
        assert [e.name for e in await backend.list_entities()] == ["Alex lives in Delhi"]
