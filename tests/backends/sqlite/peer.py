"""A second process on the same database file, driven line by line over stdin/stdout.

``python -m tests.backends.sqlite.peer <path> [<workspace> [no-embeddings]]`` opens a
``SQLiteBackend`` (hashing embedder, synchronous extraction) on ``path`` and answers one
JSON command per line with one JSON line: ``{"ok": ...}`` or ``{"error": "<exception
class>", "message": ...}``. The tests use it as the "other process" that writes the file
a store in the test has open.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from backends.sqlite import SQLiteBackend
from nams_local.embeddings import HashingEmbedder
from nams_local.models import EntityGraph

__all__ = ["graph_ids", "handle"]


def graph_ids(graph: EntityGraph) -> dict[str, list[str]]:
    """The node and edge ids of a graph, sorted (what the tests compare)."""
    return {
        "nodes": sorted(node.id for node in graph.nodes),
        "edges": sorted(edge.id for edge in graph.edges),
    }


async def handle(backend: SQLiteBackend, command: dict[str, Any]) -> Any:
    """Run one command against ``backend`` and return its JSON-able result."""
    op = command["op"]
    if op == "add_entity":
        return (await backend.add_entity(command["name"], command["type"])).id
    if op == "delete_entity":
        await backend.delete_entity(command["id"])
        return None
    if op == "add_relationship":
        rel = await backend.add_relationship(command["source"], command["target"], "KNOWS")
        return rel.id
    if op == "delete_relationship":
        await backend.delete_relationship(command["id"])
        return None
    if op == "graph":
        return graph_ids(await backend.get_graph())
    if op == "neighbourhood":
        return graph_ids(await backend.entity_neighbourhood(command["id"], 1))
    if op == "search":
        found = await backend.search_entities(command["query"], mode="vector", limit=50)
        return sorted(item.id for item in found.items)
    if op == "conversation":
        return (await backend.create_conversation(command.get("user_id"))).id
    if op == "say":
        await backend.add_message(command["conversation"], "user", command["text"])
        # Sync extraction runs right after the ack: "said" means extracted, as another
        # process expects it before the peer answers.
        await backend.wait_for_extraction(command["conversation"])
        return None
    if op == "entities":
        return sorted((e.name, e.type) for e in await backend.list_entities())
    raise ValueError(f"unknown op {op!r}")


async def main(path: str, workspace: str, embeddings: bool) -> None:
    backend = SQLiteBackend(
        path,
        embedder=HashingEmbedder(),
        embeddings=embeddings,
        workspace=workspace,
        extraction="sync",
    )
    try:
        print(json.dumps({"ok": "ready"}), flush=True)
        for line in sys.stdin:
            command = json.loads(line)
            if command["op"] == "quit":
                break
            try:
                answer: dict[str, Any] = {"ok": await handle(backend, command)}
            except Exception as error:  # reported to the test, which decides
                answer = {"error": type(error).__name__, "message": str(error)}
            print(json.dumps(answer), flush=True)
    finally:
        await backend.aclose()


if __name__ == "__main__":
    args = [*sys.argv[1:], "default", ""][:3]
    asyncio.run(main(args[0], args[1], args[2] != "no-embeddings"))
