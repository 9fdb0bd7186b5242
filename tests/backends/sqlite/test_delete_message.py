"""``SQLiteBackend.delete_message`` (``SupportsMessageDelete``): one message out, nothing
else; idempotent; never across workspaces or conversations; ids bounded."""

from __future__ import annotations

import pytest

from backends.sqlite import SQLiteBackend
from nams_local.backend import SupportsMessageDelete, message_deleter
from nams_local.errors import InvalidInputError, NotFoundError
from nams_local.validation import MAX_ID_CHARS


async def test_delete_message_removes_it_from_lists_search_and_count(
    engine: SQLiteBackend,
) -> None:
    assert isinstance(engine, SupportsMessageDelete)
    assert message_deleter(engine) is engine and engine.capabilities.message_delete
    conversation = await engine.create_conversation()
    keep = await engine.add_message(conversation.id, "user", "the red bicycle")
    gone = await engine.add_message(conversation.id, "user", "the blue bicycle")
    await engine.delete_message(conversation.id, gone.id)
    assert [m.id for m in await engine.list_messages(conversation.id)] == [keep.id]
    hits = await engine.search_messages(conversation.id, "bicycle")
    assert [m.id for m in hits.items] == [keep.id]
    assert (await engine.get_conversation(conversation.id)).message_count == 1
    await engine.delete_message(conversation.id, gone.id)  # again: nothing changes
    assert (await engine.get_conversation(conversation.id)).message_count == 1


async def test_delete_message_never_reaches_another_workspace(engine: SQLiteBackend) -> None:
    other = engine.for_workspace("someone-else")
    try:
        conversation = await other.create_conversation()
        theirs = await other.add_message(conversation.id, "user", "not yours")
        mine = await engine.create_conversation()
        await engine.delete_message(mine.id, theirs.id)  # not in this workspace: nothing
        with pytest.raises(NotFoundError):
            await engine.delete_message(conversation.id, theirs.id)
        assert [m.id for m in await other.list_messages(conversation.id)] == [theirs.id]
    finally:
        await other.aclose()


async def test_delete_message_of_another_conversation_is_not_found(engine: SQLiteBackend) -> None:
    first = await engine.create_conversation()
    second = await engine.create_conversation()
    message = await engine.add_message(first.id, "user", "stays put")
    with pytest.raises(NotFoundError, match="not in conversation"):
        await engine.delete_message(second.id, message.id)
    with pytest.raises(NotFoundError):
        await engine.delete_message("no-such-conversation", message.id)
    assert [m.id for m in await engine.list_messages(first.id)] == [message.id]


@pytest.mark.parametrize("bad", ["", "   ", "x" * (MAX_ID_CHARS + 1), " \t "])
async def test_delete_message_refuses_malformed_ids(engine: SQLiteBackend, bad: str) -> None:
    conversation = await engine.create_conversation()
    message = await engine.add_message(conversation.id, "user", "kept")
    with pytest.raises(InvalidInputError):
        await engine.delete_message(conversation.id, bad)
    with pytest.raises(InvalidInputError):
        await engine.delete_message(bad, message.id)
    assert (await engine.get_conversation(conversation.id)).message_count == 1
