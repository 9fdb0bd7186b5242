"""Context tiers, observations, reflections and extraction status of a conversation."""

from __future__ import annotations

from nams_local.backend import MemoryBackend

from .support import ids


async def test_context_of_fresh_conversation(backend: MemoryBackend) -> None:
    conversation = await backend.create_conversation(user_id="u")
    other = await backend.create_conversation(user_id="u")
    added = [
        await backend.add_message(conversation.id, "user", "Hi, I am planning a trip"),
        await backend.add_message(conversation.id, "assistant", "Where would you like to go?"),
        await backend.add_message(conversation.id, "user", "Somewhere warm"),
    ]
    await backend.add_message(other.id, "user", "A different conversation")

    context = await backend.get_context(conversation.id)

    assert ids(context.recent_messages) == ids(reversed(added))
    assert [m.content for m in context.recent_messages] == [m.content for m in reversed(added)]
    assert context.observations == []
    assert context.reflections == []


async def test_context_of_empty_conversation(backend: MemoryBackend) -> None:
    conversation = await backend.create_conversation()

    context = await backend.get_context(conversation.id)

    assert context.recent_messages == []
    assert context.observations == []
    assert context.reflections == []


async def test_observations_and_reflections_are_lists(backend: MemoryBackend) -> None:
    conversation = await backend.create_conversation()
    await backend.add_message(conversation.id, "user", "Just one message")

    observations = await backend.list_observations(conversation.id)
    limited = await backend.list_observations(conversation.id, limit=1)
    reflections = await backend.list_reflections(conversation.id)

    assert isinstance(observations, list)
    assert isinstance(limited, list)
    assert len(limited) <= 1
    assert isinstance(reflections, list)
    assert all(o.conversation_id == conversation.id for o in observations)
    assert all(r.conversation_id == conversation.id for r in reflections)


async def test_extraction_status_names_the_conversation(backend: MemoryBackend) -> None:
    conversation = await backend.create_conversation()
    message = await backend.add_message(conversation.id, "user", "Alice works at Acme")

    status = await backend.get_extraction_status(conversation.id)

    assert status.conversation_id == conversation.id
    assert all(unit.message_id == message.id for unit in status.units)
    assert all(unit.status for unit in status.units)
