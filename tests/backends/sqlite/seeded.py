"""A store holding every kind of record an export carries (export and import tests).

Two users' conversations with messages extracted in sync mode (entities, relationships,
mentions, user entities, observations and reflections follow), explicit entities and
relationships with validity (one invalidated), feedback, a merge and a legacy merge with
a canonical name, reasoning steps with tool calls (one without a step), key/value items
with and without text, and the legacy records (sessions, preferences, facts, traces with
steps and tool calls).
"""

from __future__ import annotations

from pathlib import Path

from backends.sqlite import SQLiteBackend
from nams_local import HashingEmbedder, NewMessage
from nams_local.items import ItemPut

__all__ = ["ALICE_SECRET", "BOB_SECRET", "open_store", "seed"]

#: Strings only one user's memory holds (a ``--user`` export must hold one, not the other).
ALICE_SECRET = "Zanzibarian"
BOB_SECRET = "Quetzalcoatlus"


def open_store(
    path: Path | str, workspace: str = "default", *, embeddings: bool = True
) -> SQLiteBackend:
    """The engine as the tests use it: hashing embedder (or none), sync extraction, small
    tiers."""
    return SQLiteBackend(
        path,
        embedder=HashingEmbedder(dimension=64),
        embeddings=embeddings,
        workspace=workspace,
        extraction="sync",
        observation_every=2,
        reflection_every=2,
    )


async def seed(backend: SQLiteBackend) -> None:
    alice = await backend.create_conversation("alice", {"topic": "moves", "n": 1})
    await backend.add_messages(
        alice.id,
        [
            NewMessage(role="user", content="My name is Alice and I live in Berlin."),
            NewMessage(role="assistant", content="Noted, Alice lives in Berlin."),
            NewMessage(
                role="user",
                content=f"I work at Acme Corp. My cat is called {ALICE_SECRET}. "
                "She is very old. She sleeps all day. She likes fish. She hates rain.",
                metadata={"source": "chat", "nested": {"a": [1, 2]}},
            ),
            NewMessage(role="user", content="I moved from Berlin to Lisbon in May 2024."),
            NewMessage(role="system", content="Be brief."),
        ],
    )
    bob = await backend.create_conversation("bob")
    await backend.add_messages(
        bob.id,
        [
            NewMessage(role="user", content=f"I am Bob and my lizard is {BOB_SECRET}."),
            NewMessage(role="user", content="I work at Globex in Oslo."),
        ],
    )
    paris = await backend.add_entity("Paris", "Place", "capital of France", {"country": "FR"})
    france = await backend.add_entity("France", "Place")
    rel = await backend.add_relationship(
        paris.id, france.id, "LOCATED_IN", {"since": 1}, 0.9, valid_from="1800"
    )
    old = await backend.add_relationship(paris.id, france.id, "CAPITAL_OF", valid_from="2000")
    await backend.invalidate_relationship(old.id, "2020-01")
    await backend.entity_feedback(paris.id, user_score=0.8, confirmed=True)
    dup = await backend.add_entity("Lutetia", "Place", "old name of Paris")
    await backend.merge_entities(dup.id, paris.id)
    acme = await backend.add_entity("Acme Industries", "Organization")
    acme2 = await backend.add_entity("ACME Ind.", "Organization")
    await backend.legacy.merge_entities(acme2.id, acme.id, canonical_name="Acme")
    step = await backend.record_step(alice.id, "the user moved", "update memory", "done")
    await backend.record_tool_call("geo", '{"q": "Lisbon"}', "ok", "success", step.id, 12)
    await backend.record_tool_call("clock", "{}", None, "error")
    await backend.item_batch(
        [
            ItemPut(("prefs", "alice"), "food", {"likes": "fish"}, "likes fish"),
            ItemPut(("prefs",), "plain", {"n": 1}, None, ttl=60.0),
        ]
    )
    legacy = backend.legacy
    await legacy.add_session_message("session-7", "user", "legacy hello")
    await legacy.add_preference("food", "vegetarian", "said at dinner")
    await legacy.add_fact("Alice", "LIKES", "fish")
    trace = await legacy.start_trace("session-7", "book a flight")
    tstep = await legacy.add_trace_step(trace.id, "look up flights", "search", "3 found")
    await legacy.record_trace_tool_call(tstep.id, "flights", {"to": "LIS"}, [1, 2], "success", 5)
    await legacy.complete_trace(trace.id, "booked", True)
    assert rel.id


def kinds_of(lines: list[bytes]) -> set[str]:
    """The kinds of an export's record lines (the header left out)."""
    import json

    return {json.loads(line)["kind"] for line in lines[1:]}
