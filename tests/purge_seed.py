"""Seeding every kind of record for a user, each carrying the user's marker, and scanning
a database file's bytes for it (the purge tests: engine, route, CLI).

A marker is a string no other user's data contains (``zebrafish7731``): it is in the
user id, the conversation metadata, every message (so in the extracted entities, the
full-text index, the vectors' partition key), the steps and tool calls, the items, the
legacy session and trace. After a purge, a case-insensitive scan of the file, its ``-wal``
and its ``-shm`` must not find it; before, it must (so the scan can fail).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from backends.sqlite import SQLiteBackend
from nams_local.items import ItemPut

__all__ = ["Seeded", "file_bytes", "files_holding", "open_engine", "seed_user"]

#: Messages per observation and observations per reflection: small, so both exist.
SUMMARY_EVERY = 2


def open_engine(
    path: Path | str, workspace: str = "default", *, embeddings: bool = True
) -> SQLiteBackend:
    """The engine as the purge tests use it: embeddings (hashing, offline; ``False``: text
    only, as ``--no-embeddings`` opens it), extraction and summaries in sync mode, so every
    derived record exists once a write returns."""
    from nams_local import HashingEmbedder

    return SQLiteBackend(
        path,
        embedder=HashingEmbedder(),
        embeddings=embeddings,
        workspace=workspace,
        extraction="sync",
        observation_every=SUMMARY_EVERY,
        reflection_every=SUMMARY_EVERY,
    )


@dataclass(frozen=True)
class Seeded:
    user_id: str
    marker: str
    conversation_ids: list[str]
    #: The entities made of the user's own words (owned: a purge deletes them).
    own_entity_names: list[str]
    step_id: str
    session_id: str
    trace_id: str


def _title(marker: str) -> str:
    return marker[0].upper() + marker[1:]


async def seed_user(backend: SQLiteBackend, user: str, marker: str, shared_place: str) -> Seeded:
    """Every kind of record for ``user`` (see the module docstring); ``shared_place`` is
    a place every seeded user lives in (a shared entity: it must survive)."""
    user_id = f"{user}-{marker}"
    name = f"{_title(user)} {_title(marker)}son"
    org, town = f"{_title(marker)}corp", f"{_title(marker)}ville"
    conv = await backend.create_conversation(user_id, {"topic": f"{marker} plans", "n": 7})
    texts = [
        f"My name is {name}.",
        f"I work at {org}.",
        f"I live in {shared_place}.",
        f"I moved to {town} in 2024 and I still work at {org}.",
    ]
    for text in texts:
        await backend.add_message(conv.id, "user", text, {"note": f"{marker} note"})
        await backend.add_message(conv.id, "assistant", f"Noted about {marker}: {text}")
    second = await backend.create_conversation(user_id)
    from nams_local.models import NewMessage

    await backend.add_messages(
        second.id,
        [
            NewMessage(role="user", content=f"Remember that {org} ships {marker} kits."),
            NewMessage(role="assistant", content=f"I will remember {marker} kits."),
        ],
    )
    step = await backend.record_step(
        conv.id, f"{marker} reasoning", f"{marker} action", f"{marker} result"
    )
    await backend.record_tool_call(
        "search", f'{{"q": "{marker} query"}}', f"{marker} output", step_id=step.id
    )
    orgs = [e for e in await backend.list_entities() if e.name == org]
    assert orgs, f"extraction made no entity {org!r}"
    await backend.entity_feedback(orgs[0].id, user_score=0.9, confirmed=True)
    # An API-written alias merged into the user's entity (SAME_AS), and an explicit edge.
    alias = await backend.add_entity(f"{org} Holdings", "organization", f"{marker} alias")
    await backend.merge_entities(alias.id, orgs[0].id)
    places = [e for e in await backend.list_entities() if e.name == shared_place]
    assert places, f"extraction made no entity {shared_place!r}"
    await backend.add_relationship(orgs[0].id, places[0].id, "HAS_OFFICE_IN", {"why": marker})
    await backend.item_batch(
        [
            ItemPut(
                namespace=("memories", user_id),
                key=f"{marker}-fact",
                value={"text": f"{marker} likes green tea"},
                text=f"{marker} likes green tea",
            )
        ]
    )
    legacy = backend.legacy
    session = await legacy.create_session_conversation(user_id, {"via": f"{marker} bridge"})
    session_id = session.session_id
    await legacy.add_session_message(session_id, "user", f"Bridge note on {marker} routes.")
    trace = await legacy.start_trace(session_id, f"{marker} task")
    trace_step = await legacy.add_trace_step(trace.id, f"{marker} thought", f"{marker} act")
    await legacy.record_trace_tool_call(
        trace_step.id, "lookup", {"q": f"{marker} arg"}, {"r": f"{marker} res"}
    )
    await backend.wait_for_extraction()
    return Seeded(
        user_id=user_id,
        marker=marker,
        conversation_ids=[conv.id, second.id, session.conversation_id],
        own_entity_names=[name, org, town],
        step_id=step.id,
        session_id=session_id,
        trace_id=trace.id,
    )


def file_bytes(db: Path) -> dict[str, bytes]:
    """The database file and its ``-wal`` / ``-shm`` files, those that exist, lowercased
    (FTS tokens are lowercase; the scan is case-insensitive)."""
    found: dict[str, bytes] = {}
    for suffix in ("", "-wal", "-shm"):
        path = Path(f"{db}{suffix}")
        if path.exists():
            found[path.name] = path.read_bytes().lower()
    return found


def files_holding(db: Path, needle: str) -> list[str]:
    """Which of the files hold ``needle`` (case-insensitive), in UTF-8 or UTF-16."""
    forms = [needle.lower().encode(enc) for enc in ("utf-8", "utf-16-le", "utf-16-be")]
    return [name for name, data in file_bytes(db).items() if any(f in data for f in forms)]
