"""The ``nams-local`` command: inspect a database and run an offline demo.

``info`` answers "what am I running on?" (driver, vector support, counts) and ``demo``
proves, end to end and with no key or network, that the engine stores, searches and links
memories. Heavy imports happen inside the commands so ``--help`` is instant.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import __version__

__all__ = ["main"]


def _open(db: str | None, embeddings: bool) -> Any:
    from .config import open_local_backend

    return open_local_backend(db, embeddings=embeddings)


def _cmd_info(args: argparse.Namespace) -> int:
    backend = _open(args.db, not args.no_embeddings)
    try:
        info = backend.info()
    finally:
        asyncio.run(backend.aclose())
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    counts = info.pop("counts")
    width = max(len(k) for k in [*info, *counts]) + 2
    print(f"nams-local {__version__}")
    for key, value in info.items():
        print(f"  {key:<{width}}{value}")
    print("  counts:")
    for key, value in counts.items():
        print(f"    {key:<{width - 2}}{value}")
    return 0


async def _demo(backend: Any, out: Any) -> None:
    from .models import NewMessage

    def say(text: str = "") -> None:
        print(text, file=out)

    user = "demo-user"
    say(f"Backend: {backend.info()['backend']} at {backend.info()['path']}")
    say(f"Vector search: {backend.capabilities.vector_search}")
    say()
    first = await backend.create_conversation(user, {"topic": "introductions"})
    await backend.add_messages(
        first.id,
        [
            NewMessage(role="user", content="Hi! My name is Alex and I work at TechCorp."),
            NewMessage(role="assistant", content="Nice to meet you, Alex."),
            NewMessage(role="user", content="User is from Delhi, but I moved to Bangalore."),
            NewMessage(role="user", content="I mostly write Python and use Neovim every day."),
            NewMessage(role="assistant", content="Python and Neovim, noted."),
        ],
    )
    say(f"Session 1 ({first.id}): stored 5 messages for {user}")
    second = await backend.create_conversation(user, {"topic": "weekend"})
    await backend.add_messages(
        second.id,
        [
            NewMessage(role="user", content="This weekend I am hiking near Nandi Hills."),
            NewMessage(role="assistant", content="Enjoy the sunrise at Nandi Hills!"),
            NewMessage(role="user", content="My sister Priya is joining me."),
        ],
    )
    say(f"Session 2 ({second.id}): stored 3 messages")
    say()

    searches: list[tuple[str, str | None]] = [("where do I live?", None), ("Neovim", "text")]
    if backend.capabilities.vector_search:
        searches.insert(1, ("where do I live?", "vector"))
    for query, mode in searches:
        result = await backend.search_messages(first.id, query, limit=3, mode=mode)
        say(f"search_messages({query!r}, mode={mode or 'default'}) -> {result.search_type}")
        for item in result.items:
            say(f"    {item.score:.3f}  {item.content}")
    groups = await backend.search_user_messages(
        user, "who is coming hiking?", exclude_conversation_id=first.id, include_steps=False
    )
    say("search_user_messages('who is coming hiking?') across the user's other sessions:")
    for group in groups:
        for item in group.messages[:2]:
            say(f"    [{group.conversation_id[:8]}] {item.score:.3f}  {item.content}")
    say()

    alex = await backend.add_entity("Alex", "Person", "The user; software engineer")
    techcorp = await backend.add_entity("TechCorp", "Organization", "Alex's employer")
    bangalore = await backend.add_entity("Bangalore", "Location", "City in India")
    neovim = await backend.add_entity("Neovim", "Tool", "Text editor")
    priya = await backend.add_entity("Priya", "Person", "Alex's sister")
    for source, target, rel in [
        (alex, techcorp, "WORKS_AT"),
        (alex, bangalore, "LIVES_IN"),
        (alex, neovim, "USES"),
        (priya, alex, "SIBLING_OF"),
    ]:
        await backend.add_relationship(source.id, target.id, rel)
    say("Entity graph:")
    details = await backend.get_entity(alex.id)
    for rel in details.relationships:
        arrow = "->" if rel.direction == "outgoing" else "<-"
        say(f"    (Alex)-[{rel.type}]{arrow}({rel.target_name})")
    hits = await backend.search_entities("editor for writing code", limit=2)
    say(f"search_entities('editor for writing code') -> {hits.search_type}")
    for entity in hits.items:
        say(f"    {entity.score:.3f}  {entity.name} [{entity.type}] {entity.description}")
    history = await backend.get_entity_history(alex.id)
    say(f"Messages mentioning Alex: {len(history.mentions)}")
    graph = await backend.get_graph()
    say(f"Graph: {len(graph.nodes)} nodes, {len(graph.edges)} edges")
    say()
    say("Demo finished: stored, searched and linked memories offline.")


def _cmd_demo(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="nams-demo-") as tmp:
        db = args.db or str(Path(tmp) / "demo.db")
        backend = _open(db, not args.no_embeddings)

        async def run() -> None:
            try:
                await _demo(backend, sys.stdout)
            finally:
                await backend.aclose()

        asyncio.run(run())
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nams-local", description="Graph-shaped memory for AI agents, offline."
    )
    parser.add_argument("--version", action="version", version=f"nams-local {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--db", help="SQLite database file or :memory:")
        p.add_argument("--no-embeddings", action="store_true", help="text search only, no embedder")

    info = sub.add_parser("info", help="show the backend, driver, vector support and counts")
    common(info)
    info.add_argument("--json", action="store_true", help="print JSON")
    info.set_defaults(func=_cmd_info)
    demo = sub.add_parser("demo", help="run an end-to-end offline demo (temporary database)")
    common(demo)
    demo.set_defaults(func=_cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
