"""``SQLiteBackend.delete_message`` (``SupportsMessageDelete``): one message out, nothing
else; idempotent; never across workspaces."""

from __future__ import annotations

from backends.sqlite import SQLiteBackend
from nams_local.backend import SupportsMessageDelete


async def test_delete_message_removes_it_from_lists_search_and_count(
    engine: SQLiteBackend,
) -> None:
    assert isinstance(engine, SupportsMessageDelete)
    conversation = await engine.create_conversation()
    keep = await engine.add_message(conversation.id, "user", "the red bicycle")
    gone = await engine.add_message(conversation.id, "user", "the blue bicycle")
    await engine.delete_message(gone.id)
    assert [m.id for m in await engine.list_messages(conversation.id)] == [keep.id]
    hits = await engine.search_messages(conversation.id, "bicycle")
    assert [m.id for m in hits.items] == [keep.id]
    assert (await engine.get_conversation(conversation.id)).message_count == 1
    await engine.delete_message(gone.id)  # again: nothing changes
    assert (await engine.get_conversation(conversation.id)).message_count == 1


async def test_delete_message_never_reaches_another_workspace(engine: SQLiteBackend) -> None:
    other = engine.for_workspace("someone-else")
    try:
        conversation = await other.create_conversation()
        theirs = await other.add_message(conversation.id, "user", "not yours")
        await engine.delete_message(theirs.id)
        assert [m.id for m in await other.list_messages(conversation.id)] == [theirs.id]
    finally:
        await other.aclose()
