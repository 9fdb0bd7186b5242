"""Messages: add, bulk add, list (newest first, limits), metadata, token counts."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from nams_local.backend import DEFAULT_LIST_LIMIT, MAX_BULK_MESSAGES, MemoryBackend
from nams_local.models import NewMessage

from .support import ids


async def test_add_returns_id_role_content_conversation(backend: MemoryBackend) -> None:
    conversation = await backend.create_conversation(user_id="u")

    added = await backend.add_message(conversation.id, "user", "Hello there")

    assert added.id
    assert added.role == "user"
    assert added.content == "Hello there"
    assert added.conversation_id == conversation.id
    (listed,) = await backend.list_messages(conversation.id)
    assert listed.id == added.id
    assert listed.role == "user"
    assert listed.content == "Hello there"
    assert listed.created_at is not None


@pytest.mark.parametrize("role", ["user", "assistant", "system"])
async def test_every_role_is_accepted(backend: MemoryBackend, role: str) -> None:
    conversation = await backend.create_conversation()

    added = await backend.add_message(conversation.id, role, f"a {role} message")

    (listed,) = await backend.list_messages(conversation.id)
    assert (listed.id, listed.role) == (added.id, role)


async def test_list_is_newest_first_and_limited(backend: MemoryBackend) -> None:
    conversation = await backend.create_conversation()
    added = [
        await backend.add_message(conversation.id, "user", f"message number {i}") for i in range(5)
    ]
    newest_first = ids(reversed(added))

    assert ids(await backend.list_messages(conversation.id)) == newest_first
    assert ids(await backend.list_messages(conversation.id, limit=2)) == newest_first[:2]
    assert ids(await backend.list_messages(conversation.id, limit=1)) == newest_first[:1]
    assert ids(await backend.list_messages(conversation.id, limit=200)) == newest_first


async def test_list_default_limit_is_50(backend: MemoryBackend) -> None:
    conversation = await backend.create_conversation()
    added = await backend.add_messages(
        conversation.id,
        [NewMessage(role="user", content=f"bulk line {i}") for i in range(DEFAULT_LIST_LIMIT + 10)],
    )
    newest_first = ids(reversed(added))

    assert ids(await backend.list_messages(conversation.id)) == newest_first[:DEFAULT_LIST_LIMIT]
    assert ids(await backend.list_messages(conversation.id, limit=200)) == newest_first


async def test_list_only_shows_own_conversation(backend: MemoryBackend) -> None:
    mine = await backend.create_conversation(user_id="u")
    other = await backend.create_conversation(user_id="u")
    kept = await backend.add_message(mine.id, "user", "in my conversation")
    await backend.add_message(other.id, "user", "in the other conversation")

    assert ids(await backend.list_messages(mine.id)) == [kept.id]


async def test_metadata_round_trips(backend: MemoryBackend) -> None:
    conversation = await backend.create_conversation()
    metadata: dict[str, Any] = {
        "source": "contract-test",
        "tags": ["a", "b"],
        "nested": {
            "depth": 2,
            "ratio": 0.5,
            "flag": True,
            "nothing": None,
            "list": [1, {"x": "y"}],
        },
    }
    with_meta = await backend.add_message(conversation.id, "user", "carries metadata", metadata)
    without_meta = await backend.add_message(conversation.id, "assistant", "carries none")

    listed = {m.id: m for m in await backend.list_messages(conversation.id)}

    assert listed[with_meta.id].metadata == metadata
    assert listed[without_meta.id].metadata == {}


async def test_token_count_is_a_positive_int(backend: MemoryBackend) -> None:
    conversation = await backend.create_conversation()
    await backend.add_message(
        conversation.id, "user", "The quick brown fox jumps over the lazy dog"
    )
    await backend.add_message(conversation.id, "assistant", "Ok")

    for message in await backend.list_messages(conversation.id):
        assert isinstance(message.token_count, int)
        assert message.token_count > 0


async def test_bulk_add_returns_all_in_order(backend: MemoryBackend) -> None:
    conversation = await backend.create_conversation()
    roles = ["user", "assistant", "system"]
    batch = [
        NewMessage(role=roles[i % 3], content=f"bulk message {i}") for i in range(MAX_BULK_MESSAGES)
    ]

    added = await backend.add_messages(conversation.id, batch)

    assert [(m.role, m.content) for m in added] == [(m.role, m.content) for m in batch]
    assert all(m.conversation_id == conversation.id for m in added)
    assert len(set(ids(added))) == MAX_BULK_MESSAGES
    listed = await backend.list_messages(conversation.id, limit=200)
    assert ids(listed) == ids(reversed(added))
    assert [m.content for m in listed] == [m.content for m in reversed(batch)]


async def test_bulk_add_keeps_metadata(backend: MemoryBackend) -> None:
    conversation = await backend.create_conversation()
    added = await backend.add_messages(
        conversation.id,
        [
            NewMessage(role="user", content="first", metadata={"turn": 1, "extra": {"k": "v"}}),
            NewMessage(role="assistant", content="second"),
        ],
    )

    listed = {m.id: m for m in await backend.list_messages(conversation.id)}

    assert listed[added[0].id].metadata == {"turn": 1, "extra": {"k": "v"}}
    assert listed[added[1].id].metadata == {}


async def test_bulk_add_after_single_adds_keeps_newest_first(backend: MemoryBackend) -> None:
    conversation = await backend.create_conversation()
    single = await backend.add_message(conversation.id, "user", "before the batch")
    batch = await backend.add_messages(
        conversation.id,
        [
            NewMessage(role="assistant", content="batch one"),
            NewMessage(role="user", content="batch two"),
        ],
    )

    listed = await backend.list_messages(conversation.id)

    assert ids(listed) == [batch[1].id, batch[0].id, single.id]


async def test_concurrent_adds_all_land(backend: MemoryBackend) -> None:
    first = await backend.create_conversation()
    second = await backend.create_conversation()

    added = await asyncio.gather(
        *(
            backend.add_message((first if i % 2 else second).id, "user", f"concurrent message {i}")
            for i in range(20)
        )
    )

    assert len(set(ids(added))) == 20
    first_ids = {m.id for m in added if m.conversation_id == first.id}
    second_ids = {m.id for m in added if m.conversation_id == second.id}
    assert {m.id for m in await backend.list_messages(first.id)} == first_ids
    assert {m.id for m in await backend.list_messages(second.id)} == second_ids
    assert len(first_ids) == len(second_ids) == 10
