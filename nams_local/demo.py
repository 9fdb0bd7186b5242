"""The offline demo behind ``nams-local demo``.

Part one drives the engine directly (store, search three ways, link entities). Part two
is the product's point: two sessions of a chat through the memory middleware with a
scripted model, where the second session's prompt visibly carries what the first said.
"""

from __future__ import annotations

from typing import Any, TextIO

from .integrations import ScriptedChatModel, create_nams
from .memory_block import HEADER
from .models import NewMessage
from .scope import Scope

__all__ = ["chat_demo", "engine_demo", "run_demo"]


async def engine_demo(backend: Any, out: TextIO) -> None:
    """Store, search and link memories directly through the backend."""

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

    # The engine extracted entities and relationships from the messages as they were
    # stored; adding a name it already holds reuses that entity (and fills its description).
    alex = await backend.add_entity("Alex", "person", "The user; software engineer")
    neovim = await backend.add_entity("neovim", "tool", "Text editor")
    say(f"add_entity('neovim') reused the extracted {neovim.name!r}: {neovim.reused}")
    if not alex.reused:  # extraction off: link the entities by hand instead
        techcorp = await backend.add_entity("TechCorp", "organization", "Alex's employer")
        await backend.add_relationship(alex.id, techcorp.id, "WORKS_AT")
        await backend.add_relationship(alex.id, neovim.id, "USES")
    say("Entity graph (extracted from the messages):")
    details = await backend.get_entity(alex.id)
    for rel in details.relationships:
        arrow = "->" if rel.direction == "outgoing" else "<-"
        say(f"    (Alex)-[{rel.type}]{arrow}({rel.target_name})")
    hits = await backend.search_entities("editor for writing code", limit=2)
    say(f"search_entities('editor for writing code') -> {hits.search_type}")
    for entity in hits.items:
        say(f"    {entity.score:.3f}  {entity.name} [{entity.type}] {entity.description or ''}")
    history = await backend.get_entity_history(alex.id)
    say(f"Messages mentioning Alex: {len(history.mentions)}")
    graph = await backend.get_graph()
    say(f"Graph: {len(graph.nodes)} nodes, {len(graph.edges)} edges")


async def chat_demo(backend: Any, out: TextIO) -> None:
    """Two sessions through the middleware; show the prompt the model got in session 2."""

    def say(text: str = "") -> None:
        print(text, file=out)

    user = "demo-chat-user"
    # Entities are workspace-wide (as on hosted NAMS): a workspace of its own keeps part
    # one's entities out of this user's prompt.
    for_workspace = getattr(backend, "for_workspace", None)
    if for_workspace is not None:
        backend = for_workspace("demo-chat")
    nams = create_nams(backend)
    say("Chat through the memory middleware (ScriptedChatModel, offline):")
    first = await backend.create_conversation(user)
    session1 = nams.wrap(
        ScriptedChatModel(["Welcome to Pune, Sam!", "Noted: oat milk, no sugar."]),
        Scope(user, first.id),
    )
    for text in ("Hi, I'm Sam and I just moved to Pune.", "I take my coffee with oat milk."):
        reply = await session1.generate([{"role": "user", "content": text}])
        say(f"  session 1  user: {text}")
        say(f"             model: {reply.text}")
    second = await backend.create_conversation(user)
    model = ScriptedChatModel(["Oat milk, no sugar — coming up in Pune."])
    session2 = nams.wrap(model, Scope(user, second.id))
    question = "How do I like my coffee?"
    reply = await session2.generate([{"role": "user", "content": question}])
    say(f"  session 2  user: {question}")
    say(f"             model: {reply.text}")
    say("  The prompt the model received in session 2:")
    for line in model.calls[0].last_user_text.splitlines():
        say(f"    | {line}")
    stored = await backend.list_messages(second.id)
    clean = all(HEADER not in m.content for m in stored)
    say(f"  Stored in session 2: {len(stored)} messages, clean text only: {clean}")


async def run_demo(backend: Any, out: TextIO) -> None:
    await engine_demo(backend, out)
    print(file=out)
    await chat_demo(backend, out)
    print(file=out)
    print("Demo finished: stored, searched, linked and recalled memories offline.", file=out)
