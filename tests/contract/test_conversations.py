"""Conversations: create, get, list (order, user filter, limit, counts), delete."""

from __future__ import annotations

from typing import Any

import pytest

from nams_local.backend import DEFAULT_LIST_LIMIT, MemoryBackend
from nams_local.errors import InvalidInputError, NotFoundError
from nams_local.models import MetadataValue, NewMessage

from .support import ids, tick


async def test_create_then_get_round_trips_user_and_metadata(backend: MemoryBackend) -> None:
    created = await backend.create_conversation(
        user_id="user-1", metadata={"topic": "travel", "lang": "en"}
    )
    assert created.id

    got = await backend.get_conversation(created.id)

    assert got.id == created.id
    assert got.user_id == "user-1"
    assert got.metadata == {"topic": "travel", "lang": "en"}
    assert got.workspace_id
    assert got.created_at is not None


async def test_create_without_arguments(backend: MemoryBackend) -> None:
    created = await backend.create_conversation()

    got = await backend.get_conversation(created.id)

    assert got.id == created.id
    assert got.user_id is None
    assert got.metadata == {}


async def test_conversation_ids_are_unique(backend: MemoryBackend) -> None:
    created = [await backend.create_conversation(user_id="u") for _ in range(5)]

    listed = await backend.list_conversations()

    assert len(set(ids(created))) == 5
    assert set(ids(listed)) == set(ids(created))


async def test_list_is_newest_activity_first(backend: MemoryBackend) -> None:
    first = await backend.create_conversation(user_id="u")
    await tick()
    second = await backend.create_conversation(user_id="u")
    await tick()
    third = await backend.create_conversation(user_id="u")

    assert ids(await backend.list_conversations()) == [third.id, second.id, first.id]

    await tick()
    await backend.add_message(first.id, "user", "bringing the first one back")

    assert ids(await backend.list_conversations()) == [first.id, third.id, second.id]
    assert ids(await backend.list_conversations(user_id="u")) == [first.id, third.id, second.id]


async def test_list_filters_by_user(backend: MemoryBackend) -> None:
    alice_1 = await backend.create_conversation(user_id="alice")
    bob = await backend.create_conversation(user_id="bob")
    alice_2 = await backend.create_conversation(user_id="alice")
    anonymous = await backend.create_conversation()

    alices = await backend.list_conversations(user_id="alice")
    bobs = await backend.list_conversations(user_id="bob")

    assert set(ids(alices)) == {alice_1.id, alice_2.id}
    assert all(c.user_id == "alice" for c in alices)
    assert ids(bobs) == [bob.id]
    assert await backend.list_conversations(user_id="carol") == []
    assert set(ids(await backend.list_conversations())) == {
        alice_1.id,
        bob.id,
        alice_2.id,
        anonymous.id,
    }


async def test_list_items_carry_user_and_metadata(backend: MemoryBackend) -> None:
    created = await backend.create_conversation(user_id="dana", metadata={"channel": "email"})

    (item,) = await backend.list_conversations()

    assert item.id == created.id
    assert item.user_id == "dana"
    assert item.metadata == {"channel": "email"}


async def test_list_limit_keeps_the_newest(backend: MemoryBackend) -> None:
    created = []
    for _ in range(5):
        created.append(await backend.create_conversation(user_id="u"))
        await tick()
    newest_first = ids(reversed(created))

    assert ids(await backend.list_conversations(limit=2)) == newest_first[:2]
    assert ids(await backend.list_conversations(user_id="u", limit=3)) == newest_first[:3]
    assert ids(await backend.list_conversations(limit=200)) == newest_first


async def test_list_default_limit(backend: MemoryBackend) -> None:
    for _ in range(DEFAULT_LIST_LIMIT + 2):
        await backend.create_conversation(user_id="many")

    assert len(await backend.list_conversations()) == DEFAULT_LIST_LIMIT
    assert len(await backend.list_conversations(limit=200)) == DEFAULT_LIST_LIMIT + 2


async def test_list_reports_message_count(backend: MemoryBackend) -> None:
    busy = await backend.create_conversation(user_id="u")
    empty = await backend.create_conversation(user_id="u")
    for i in range(3):
        await backend.add_message(busy.id, "user", f"message number {i}")

    counts = {c.id: c.message_count for c in await backend.list_conversations()}

    assert counts == {busy.id: 3, empty.id: 0}


async def test_delete_removes_conversation_and_its_messages(backend: MemoryBackend) -> None:
    keep = await backend.create_conversation(user_id="u")
    doomed = await backend.create_conversation(user_id="u")
    kept_message = await backend.add_message(keep.id, "user", "I sailed to Zanzibar once")
    await backend.add_message(doomed.id, "user", "Zanzibar has spice farms")
    await backend.add_message(doomed.id, "assistant", "Yes, cloves mostly")
    place = await backend.add_entity("Zanzibar", "location")
    before = await backend.get_entity_history(place.id)
    assert {m.conversation_id for m in before.mentions} == {keep.id, doomed.id}

    await backend.delete_conversation(doomed.id)

    with pytest.raises(NotFoundError):
        await backend.get_conversation(doomed.id)
    with pytest.raises(NotFoundError):
        await backend.list_messages(doomed.id)
    assert ids(await backend.list_conversations()) == [keep.id]
    assert ids(await backend.list_conversations(user_id="u")) == [keep.id]
    after = await backend.get_entity_history(place.id)
    assert [(m.message_id, m.conversation_id) for m in after.mentions] == [
        (kept_message.id, keep.id)
    ]
    assert ids(await backend.list_messages(keep.id)) == [kept_message.id]


async def test_delete_is_idempotent(backend: MemoryBackend) -> None:
    """A second delete (or one of an id never seen) succeeds and touches nothing else."""
    conversation = await backend.create_conversation()
    keep = await backend.create_conversation()
    await backend.delete_conversation(conversation.id)

    await backend.delete_conversation(conversation.id)
    await backend.delete_conversation("00000000-0000-4000-8000-000000000000")

    with pytest.raises(NotFoundError):
        await backend.get_conversation(conversation.id)
    assert ids(await backend.list_conversations()) == [keep.id]


@pytest.mark.parametrize(
    "metadata",
    [
        {"source": "e2e", "seq": 1},
        {"ratio": 0.25, "flag": True, "off": False, "none": None, "big": 2**53 + 1},
        {"text": "1", "int": 1, "float": 1.5},
        {},
    ],
)
async def test_metadata_scalars_come_back_as_given(
    backend: MemoryBackend, metadata: dict[str, MetadataValue]
) -> None:
    created = await backend.create_conversation(user_id="u", metadata=metadata)
    read = await backend.get_conversation(created.id)
    [listed] = await backend.list_conversations(user_id="u")

    for got in (created.metadata, read.metadata, listed.metadata):
        assert got == metadata
        assert {k: type(v) for k, v in got.items()} == {k: type(v) for k, v in metadata.items()}


@pytest.mark.parametrize(
    "metadata",
    [{"nested": {"a": "b"}}, {"list": [1, 2]}, {"nan": float("nan")}, {"inf": float("inf")}],
)
async def test_metadata_objects_arrays_and_non_finite_are_refused(
    backend: MemoryBackend, metadata: dict[str, Any]
) -> None:
    with pytest.raises(InvalidInputError):
        await backend.create_conversation(user_id="u", metadata=metadata)

    assert await backend.list_conversations() == []


async def test_bulk_add_counts_as_activity(backend: MemoryBackend) -> None:
    older = await backend.create_conversation(user_id="u")
    await tick()
    newer = await backend.create_conversation(user_id="u")
    await tick()

    await backend.add_messages(older.id, [NewMessage(role="user", content="back again")])

    listed = await backend.list_conversations()
    assert ids(listed) == [older.id, newer.id]
    assert {c.id: c.message_count for c in listed} == {older.id: 1, newer.id: 0}
