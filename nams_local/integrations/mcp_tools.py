"""``tools_with_mcp``: the memory tools plus every tool of a remote MCP server (§5.6).

The MCP server is reached with the official ``mcp`` SDK over streamable HTTP; each of its
tools becomes a :class:`~nams_local.integrations.tool.Tool` (name prefixed with
``tool_prefix``) so a tool loop sees one kind of tool. The merged set is registered with
the memory tools' client, so ``ensure_memory_stored`` accepts it.

Session lifetime: the MCP client lives in a background task that owns its connection
(the SDK's task groups must be entered and left in one task), so ``close()`` may be called
from anywhere. Use it as a context manager, or await it and close it yourself::

    async with nams.tools_with_mcp(scope, McpConfig(url)) as result:
        await ToolLoop(model, result.tools).run(prompt)

    result = await nams.tools_with_mcp(scope, McpConfig(url))
    ...
    await result.close()

The ``mcp`` package is an optional extra (``pip install 'nams-local[mcp]'``) imported
only when a connection is made.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import re
from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any

import httpx

from ..log import MemoryLogger
from .tool import Tool
from .tools import MemoryToolSet, memory_tool_context, register_memory_tools

if TYPE_CHECKING:
    from mcp import Client

__all__ = [
    "McpConfig",
    "McpStatus",
    "NamsMcpConnectionError",
    "PendingTools",
    "ToolsWithMcp",
    "connect_mcp_tools",
    "require_mcp_sdk",
]

Headers = Mapping[str, str]
HeadersSource = Headers | Callable[[], Headers | Awaitable[Headers]]

_STATUS_IN_MESSAGE = re.compile(r"HTTP (\d{3})")
_PROBE_TIMEOUT = 10.0


@dataclass(frozen=True, slots=True)
class McpConfig:
    """Where the MCP server is. ``headers`` may be a function (sync or async), evaluated
    once per connection; ``optional=True`` degrades to the memory tools when it is down."""

    url: str
    headers: HeadersSource | None = None
    tool_prefix: str | None = None
    optional: bool = False
    #: Seconds to connect and list the tools (not in the TS package, which waits forever).
    timeout: float = 30.0


class NamsMcpConnectionError(ConnectionError):
    """The MCP server could not be reached or refused the connection."""

    def __init__(
        self,
        message: str,
        *,
        url: str,
        status: int | None = None,
        www_authenticate: str | None = None,
    ) -> None:
        super().__init__(message)
        self.url = url
        self.status = status
        self.www_authenticate = www_authenticate


@dataclass(slots=True)
class McpStatus:
    """``connected``, the (prefixed) MCP tool names, and the error when it failed."""

    connected: bool
    tool_names: list[str] = field(default_factory=list)
    error: NamsMcpConnectionError | None = None


async def _no_close() -> None:
    return None


@dataclass(slots=True)
class ToolsWithMcp:
    """``tools`` (memory + MCP), the MCP status (``None`` without an MCP config) and
    ``close()``, which ends the MCP session (idempotent)."""

    tools: MemoryToolSet
    mcp: McpStatus | None = None
    _close: Callable[[], Awaitable[None]] = _no_close

    async def close(self) -> None:
        await self._close()


class PendingTools:
    """What ``tools_with_mcp`` returns: await it, or use it as ``async with``."""

    def __init__(self, connect: Callable[[], Awaitable[ToolsWithMcp]]) -> None:
        self._connect = connect
        self._result: ToolsWithMcp | None = None

    def __await__(self) -> Generator[Any, None, ToolsWithMcp]:
        return self._connect().__await__()

    async def __aenter__(self) -> ToolsWithMcp:
        self._result = await self._connect()
        return self._result

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._result is not None:
            await self._result.close()


def _leaf(error: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups from the SDK's task groups."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


class _Connection:
    """An MCP client session owned by one background task (see module doc)."""

    def __init__(self, url: str, headers: Headers) -> None:
        self.url = url
        self.headers = dict(headers)
        self.status: int | None = None
        self._client: Client | None = None
        self._closing = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def open(self, timeout: float) -> list[Any]:
        """Connect and list the server's tools within ``timeout`` seconds; raise what the
        SDK raised on failure (``TimeoutError`` when the server does not answer)."""
        ready: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._own(ready))
        try:
            return await asyncio.wait_for(asyncio.shield(ready), timeout)
        except TimeoutError:
            await self._abort()
            raise TimeoutError(f"no answer within {timeout:g}s") from None
        except BaseException:
            await self._abort()
            raise

    async def _abort(self) -> None:
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _record_status(self, response: Any) -> None:
        if response.status_code >= 400 and self.status is None:
            self.status = int(response.status_code)

    async def _own(self, ready: asyncio.Future[list[Any]]) -> None:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        try:
            http = httpx2.AsyncClient(
                headers=self.headers,
                timeout=httpx2.Timeout(30.0, read=300.0),
                event_hooks={"response": [self._record_status]},
            )
            async with http, Client(streamable_http_client(self.url, http_client=http)) as client:
                tools: list[Any] = []
                cursor: str | None = None
                while True:
                    page = await client.list_tools(cursor=cursor)
                    tools.extend(page.tools)
                    cursor = page.next_cursor
                    if not cursor:
                        break
                if ready.done():  # the caller gave up waiting
                    return
                self._client = client
                ready.set_result(tools)
                await self._closing.wait()
        except BaseException as exc:
            cause = _leaf(exc)
            if ready.done():
                if not isinstance(exc, Exception):
                    raise  # cancelled or interrupted: let it through
                # The session broke after it was up: later calls fail with "closed".
            elif isinstance(cause, asyncio.CancelledError):
                ready.cancel()
                raise
            else:
                ready.set_exception(cause)
        finally:
            self._client = None

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        client = self._client
        if client is None:
            raise RuntimeError(f"the MCP session to {self.url} is closed")
        result = await client.call_tool(name, arguments)
        shaped: dict[str, Any] = {
            "content": [
                block.model_dump(mode="json", by_alias=True, exclude_none=True)
                for block in result.content
            ],
            "isError": result.is_error,
        }
        if result.structured_content is not None:
            shaped["structuredContent"] = result.structured_content
        return shaped

    async def close(self) -> None:
        self._closing.set()
        task = self._task
        if task is not None and not task.done():
            await task


def require_mcp_sdk() -> None:
    """Fail early, with the install hint, when the optional ``mcp`` package is missing."""
    try:
        import mcp  # noqa: F401
    except ImportError as exc:
        raise ImportError("MCP tools need the mcp package: pip install 'nams-local[mcp]'") from exc


async def _headers(source: HeadersSource | None) -> Headers:
    if source is None:
        return {}
    if callable(source):
        value = source()
        return await value if inspect.isawaitable(value) else value
    return source


async def _probe_challenge(url: str) -> str | None:
    """``WWW-Authenticate`` of a bare POST, as the TypeScript package probes after a 401."""
    try:
        async with httpx.AsyncClient(timeout=_PROBE_TIMEOUT) as client:
            response = await client.post(
                url,
                json={},
                headers={
                    "Content-Type": "application/json",
                    "Accept": "application/json, text/event-stream",
                },
            )
    except httpx.HTTPError:
        return None
    challenge: str | None = response.headers.get("www-authenticate")
    return challenge


async def _connection_error(
    url: str, cause: BaseException, status: int | None
) -> NamsMcpConnectionError:
    if status is None:
        found = _STATUS_IN_MESSAGE.search(str(cause))
        status = int(found.group(1)) if found else None
    challenge = await _probe_challenge(url) if status == 401 else None
    message = f"MCP connection to {url} failed"
    if status is not None:
        message += f" (HTTP {status})"
    if challenge:
        scheme = challenge.split()[0]
        message += (
            f". The server requires {scheme} authentication — supply a matching "
            f"Authorization header via mcp.headers. Challenge: {challenge}"
        )
    else:
        message += f": {str(cause) or type(cause).__name__}"
    error = NamsMcpConnectionError(message, url=url, status=status, www_authenticate=challenge)
    error.__cause__ = cause
    return error


def _proxy(connection: _Connection, remote: Any, name: str) -> Tool:
    async def execute(arguments: dict[str, Any]) -> dict[str, Any]:
        return await connection.call(remote.name, arguments)

    schema = remote.input_schema or {"type": "object", "properties": {}}
    return Tool(name, remote.description or "", dict(schema), execute)


def _merge(
    memory: MemoryToolSet, mcp_tools: dict[str, Tool], prefix: str | None, logger: MemoryLogger
) -> MemoryToolSet:
    """NAMS tools first, MCP tools override (with the warning when a name clashes)."""
    shadowed = [name for name in mcp_tools if name in memory]
    if shadowed:
        message = (
            f"MCP tool(s) [{', '.join(shadowed)}] share a name with NAMS memory tools "
            "and will override them"
        )
        if not prefix:
            message += " — set mcp.toolPrefix to namespace MCP tools and avoid this"
        logger.warn(message)
    merged = MemoryToolSet({**memory, **mcp_tools})
    context = memory_tool_context(memory)
    if context is not None:
        register_memory_tools(merged, context)
    return merged


async def connect_mcp_tools(
    memory: MemoryToolSet, mcp: McpConfig | None, logger: MemoryLogger
) -> ToolsWithMcp:
    """Merge the tools of the MCP server ``mcp`` into ``memory`` (§5.6).

    Raises :class:`NamsMcpConnectionError` when the server cannot be used, unless
    ``mcp.optional`` — then warns and returns the memory tools alone.
    """
    if mcp is None:
        return ToolsWithMcp(tools=memory)
    require_mcp_sdk()
    connection: _Connection | None = None
    try:
        connection = _Connection(mcp.url, await _headers(mcp.headers))
        remote_tools = await connection.open(mcp.timeout)
    except Exception as exc:
        status = connection.status if connection is not None else None
        error = await _connection_error(mcp.url, exc, status)
        if not mcp.optional:
            raise error from exc
        logger.warn(f"{error} — continuing with NAMS memory tools only")
        return ToolsWithMcp(tools=memory, mcp=McpStatus(connected=False, error=error))
    prefix = mcp.tool_prefix or ""
    mcp_tools = {
        f"{prefix}{remote.name}": _proxy(connection, remote, f"{prefix}{remote.name}")
        for remote in remote_tools
    }
    return ToolsWithMcp(
        tools=_merge(memory, mcp_tools, mcp.tool_prefix, logger),
        mcp=McpStatus(connected=True, tool_names=list(mcp_tools)),
        _close=connection.close,
    )
