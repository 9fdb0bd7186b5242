"""``Tool``: one callable tool in the OpenAI function-calling shape.

Memory tools (``query_memory``, ``store_memory``), app tools and tools proxied from an MCP
server are all ``Tool`` objects, so the tool loop, the guarantees and MCP code see one
type. ``execute`` may be sync or async; :meth:`Tool.run` awaits either.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Tool", "ToolSet"]


@dataclass(eq=False)
class Tool:
    """A tool a chat model can call.

    ``parameters`` is the JSON schema of the arguments object; ``execute`` takes the
    parsed arguments and returns anything JSON-encodable (or an awaitable of it).
    Identity matters (``eq=False``): guarantees check that they see the very tool set
    they were given, not a copy.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    execute: Callable[[dict[str, Any]], Any | Awaitable[Any]]

    def definition(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry for this tool."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    async def run(self, arguments: dict[str, Any]) -> Any:
        """Execute with ``arguments``, awaiting the result when ``execute`` is async."""
        result = self.execute(arguments)
        if inspect.isawaitable(result):
            return await result
        return result


#: Tools by name, in the order the model sees them.
ToolSet = dict[str, Tool]
