"""Memory as an MCP server: any MCP client gets the tools a chat model gets in tools mode.

``create_mcp_server(backend, user_id=...)`` builds an MCP server (the ``mcp`` SDK's
low-level ``Server``) whose tools are ``query_memory`` and ``store_memory`` — the very
``Tool`` objects of tools mode, same names, descriptions, JSON schemas and results — plus
read tools over the entity graph: ``list_entities``, ``get_entity``, ``search_entities``,
``get_graph`` and, when the backend can, ``get_entity_neighbourhood``. Any ``ToolSet``
can be served the same way (:func:`serve_tool_set`). ``nams-local mcp`` runs it over stdio
or streamable HTTP (``nams_local.mcp_serve``).

Results go back as JSON text content plus ``structuredContent``; a tool that raises (bad
arguments, an unknown id) answers ``isError: true`` with the message, never a crash.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from ..backend import MemoryBackend
from ..scope import Scope
from .mcp_tools import require_mcp_sdk
from .memory_tools import tool_schema
from .middleware import MemoryConfig
from .tool import Tool, ToolSet
from .tools import build_memory_tools

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

__all__ = ["create_mcp_server", "memory_server_tools", "serve_tool_set"]

SERVER_NAME = "nams-local"


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ListEntitiesArgs(_Args):
    type: str | None = Field(default=None, description="Only entities of this type")


class GetEntityArgs(_Args):
    entity_id: str = Field(min_length=1, description="The entity's id")


class SearchEntitiesArgs(_Args):
    query: str = Field(min_length=1, description="Words or phrase to search entities for")
    type: str | None = Field(default=None, description="Only entities of this type")
    limit: int = Field(default=10, ge=1, le=50)


class GetGraphArgs(_Args):
    pass


class NeighbourhoodArgs(_Args):
    entity_id: str = Field(min_length=1, description="The entity at the centre")
    depth: int = Field(default=1, ge=1, le=3, description="Hops, in either direction")


def _dump(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, list):
        return [_dump(item) for item in value]
    return value


def _read_tool(
    name: str,
    description: str,
    args: type[_Args],
    read: Callable[[Any], Awaitable[Any]],
) -> Tool:
    async def execute(arguments: dict[str, Any]) -> Any:
        return _dump(await read(args.model_validate(arguments)))

    return Tool(name, description, tool_schema(args), execute)


def _graph_tools(backend: MemoryBackend) -> list[Tool]:
    async def list_entities(a: ListEntitiesArgs) -> dict[str, Any]:
        return {"entities": _dump(await backend.list_entities(a.type))}

    async def search_entities(a: SearchEntitiesArgs) -> dict[str, Any]:
        found = await backend.search_entities(a.query, a.type, a.limit)
        return {"entities": _dump(found.items), "search_type": found.search_type}

    async def get_entity(a: GetEntityArgs) -> Any:
        return await backend.get_entity(a.entity_id)

    async def get_graph(a: GetGraphArgs) -> Any:
        return await backend.get_graph()

    async def neighbourhood(a: NeighbourhoodArgs) -> Any:
        return await backend.entity_neighbourhood(a.entity_id, a.depth)

    tools = [
        _read_tool(
            "list_entities",
            "List the entities (people, places, things, concepts) stored in memory.",
            ListEntitiesArgs,
            list_entities,
        ),
        _read_tool(
            "get_entity",
            "One entity from memory with its relationships in both directions.",
            GetEntityArgs,
            get_entity,
        ),
        _read_tool(
            "search_entities",
            "Search the entities stored in memory by name and description.",
            SearchEntitiesArgs,
            search_entities,
        ),
        _read_tool(
            "get_graph",
            "The whole entity graph in memory: entities as nodes, relationships as edges.",
            GetGraphArgs,
            get_graph,
        ),
    ]
    if backend.capabilities.graph_neighbourhood:
        tools.append(
            _read_tool(
                "get_entity_neighbourhood",
                "The entities within a few hops of one entity, with the edges between them.",
                NeighbourhoodArgs,
                neighbourhood,
            )
        )
    return tools


def memory_server_tools(backend: MemoryBackend, config: MemoryConfig, scope: Scope) -> ToolSet:
    """``query_memory`` and ``store_memory`` for ``scope``, then the graph read tools."""
    tools: ToolSet = dict(build_memory_tools(backend, config, scope))
    for tool in _graph_tools(backend):
        tools[tool.name] = tool
    return tools


def serve_tool_set(tools: ToolSet, name: str = SERVER_NAME) -> Server[Any]:
    """An MCP server listing ``tools`` with their exact schemas and running them on call."""
    require_mcp_sdk()
    import mcp.types as types
    from mcp.server.lowlevel import Server

    listing = types.ListToolsResult(
        tools=[
            types.Tool(name=t.name, description=t.description, input_schema=t.parameters)
            for t in tools.values()
        ]
    )

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return listing

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = tools.get(params.name)
        try:
            if tool is None:
                raise LookupError(f"unknown tool {params.name!r}")
            output = await tool.run(dict(params.arguments or {}))
        except Exception as exc:
            message = str(exc) or type(exc).__name__
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=message)], is_error=True
            )
        text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=output if isinstance(output, dict) else None,
        )

    return Server(name, on_list_tools=list_tools, on_call_tool=call_tool)


def create_mcp_server(
    backend: MemoryBackend,
    *,
    user_id: str,
    conversation_id: str | None = None,
    config: MemoryConfig | None = None,
    name: str = SERVER_NAME,
) -> Server[Any]:
    """The memory MCP server for one user (their latest conversation unless one is named)."""
    scope = Scope(user_id, conversation_id)
    return serve_tool_set(memory_server_tools(backend, config or MemoryConfig(), scope), name)
