"""Search: messages (scope, scores, modes, stemming, limit), entities, user-wide search."""

from __future__ import annotations

import pytest

from nams_local.backend import MemoryBackend
from nams_local.errors import NotSupportedError
from nams_local.models import Conversation, Message, NewMessage

from .support import (
    assert_ranked,
    default_search_type,
    ids,
    supported_modes,
    text_mode,
    tick,
)

# -- message search ----------------------------------------------------------------------


async def _lisbon(backend: MemoryBackend) -> tuple[Conversation, list[Message], Message]:
    """A conversation with two Lisbon messages and one unrelated, plus a Lisbon message
    in another conversation of the same user."""
    here = await backend.create_conversation(user_id="traveller")
    elsewhere = await backend.create_conversation(user_id="traveller")
    hits = [
        await backend.add_message(here.id, "user", "I visited Lisbon last spring"),
        await backend.add_message(here.id, "assistant", "The trams in Lisbon are famous"),
    ]
    await backend.add_message(here.id, "user", "Completely unrelated remark about pasta")
    foreign = await backend.add_message(elsewhere.id, "user", "Lisbon is the capital of Portugal")
    return here, hits, foreign


async def test_search_is_scoped_to_one_conversation(backend: MemoryBackend) -> None:
    here, hits, foreign = await _lisbon(backend)
    own = {m.id for m in await backend.list_messages(here.id)}

    for mode, _ in supported_modes(backend):
        result = await backend.search_messages(here.id, "Lisbon", limit=50, mode=mode)
        found = ids(result.items)
        assert foreign.id not in found, mode
        assert set(found) <= own, mode
        assert {m.id for m in hits} <= set(found), mode


async def test_text_search_finds_exactly_the_matching_messages(backend: MemoryBackend) -> None:
    here, hits, _ = await _lisbon(backend)

    result = await backend.search_messages(here.id, "Lisbon", mode=text_mode(backend))

    assert result.search_type == "text"
    assert set(ids(result.items)) == {m.id for m in hits}
    by_id = {m.id: m for m in hits}
    for item in result.items:
        assert item.content == by_id[item.id].content
        assert item.role == by_id[item.id].role


async def test_scores_are_in_unit_interval_and_sorted(backend: MemoryBackend) -> None:
    here, _, _ = await _lisbon(backend)
    await backend.add_message(here.id, "user", "Lisbon Lisbon Lisbon, I love Lisbon")

    for mode, _ in supported_modes(backend):
        result = await backend.search_messages(here.id, "Lisbon trams", limit=50, mode=mode)
        assert result.items, mode
        assert_ranked(result)


async def test_best_text_hit_scores_one(backend: MemoryBackend) -> None:
    here, _, _ = await _lisbon(backend)

    result = await backend.search_messages(here.id, "Lisbon", mode=text_mode(backend))

    assert result.items
    assert result.items[0].score == pytest.approx(1.0)


async def test_default_search_type(backend: MemoryBackend) -> None:
    here, _, _ = await _lisbon(backend)

    result = await backend.search_messages(here.id, "Lisbon")

    assert result.search_type == default_search_type(backend)


async def test_explicit_modes_report_their_search_type(backend: MemoryBackend) -> None:
    here, _, _ = await _lisbon(backend)

    for mode, expected in supported_modes(backend):
        result = await backend.search_messages(here.id, "Lisbon", mode=mode)
        assert result.search_type == expected, mode

    if not backend.capabilities.vector_search:
        with pytest.raises(NotSupportedError):
            await backend.search_messages(here.id, "Lisbon", mode="vector")


async def test_text_search_is_stemmed(backend: MemoryBackend) -> None:
    conversation = await backend.create_conversation()
    delhi = await backend.add_message(conversation.id, "user", "I have lived in Delhi")
    await backend.add_message(conversation.id, "user", "My favourite colour is blue")

    result = await backend.search_messages(conversation.id, "living", mode=text_mode(backend))

    assert ids(result.items) == [delhi.id]


async def test_text_search_without_matching_words_finds_nothing(backend: MemoryBackend) -> None:
    here, _, _ = await _lisbon(backend)

    result = await backend.search_messages(here.id, "xylophone", mode=text_mode(backend))

    assert result.search_type == "text"
    assert result.items == []


async def test_search_limit_is_respected(backend: MemoryBackend) -> None:
    conversation = await backend.create_conversation()
    await backend.add_messages(
        conversation.id,
        [NewMessage(role="user", content=f"rocket launch number {i}") for i in range(6)],
    )

    for mode, _ in supported_modes(backend):
        assert len((await backend.search_messages(conversation.id, "rocket", 3, mode)).items) == 3
        assert len((await backend.search_messages(conversation.id, "rocket", 1, mode)).items) == 1
        assert len((await backend.search_messages(conversation.id, "rocket", 200, mode)).items) == 6


async def test_vector_search_ranks_by_meaning(backend: MemoryBackend) -> None:
    conversation = await backend.create_conversation()
    dog = await backend.add_message(
        conversation.id, "user", "My puppy loves chasing balls in the park"
    )
    await backend.add_message(conversation.id, "user", "Quarterly tax filings are due in April")

    if not backend.capabilities.vector_search:
        with pytest.raises(NotSupportedError):
            await backend.search_messages(conversation.id, "dog", mode="vector")
        return
    result = await backend.search_messages(conversation.id, "dog", mode="vector")

    assert result.search_type == "vector"
    assert result.items[0].id == dog.id
    assert_ranked(result)


# -- entity search -----------------------------------------------------------------------


async def test_entity_search_matches_name_and_description(backend: MemoryBackend) -> None:
    kestrel = await backend.add_entity("Kestrel", "animal", "A small falcon that hovers")
    otter = await backend.add_entity("Otter", "animal", "A river mammal that eats fish")
    mode = text_mode(backend)

    by_name = await backend.search_entities("Kestrel", mode=mode)
    by_description = await backend.search_entities("falcon", mode=mode)

    assert by_name.search_type == "text"
    assert ids(by_name.items) == [kestrel.id]
    assert ids(by_description.items) == [kestrel.id]
    assert ids((await backend.search_entities("mammal", mode=mode)).items) == [otter.id]
    found = by_name.items[0]
    assert (found.name, found.type, found.description) == (
        "Kestrel",
        "animal",
        "A small falcon that hovers",
    )
    default = await backend.search_entities("falcon")
    assert default.search_type == default_search_type(backend)
    assert default.items[0].id == kestrel.id


async def test_entity_search_type_filter(backend: MemoryBackend) -> None:
    cat = await backend.add_entity("Jaguar", "animal", "A big cat of the Americas")
    car = await backend.add_entity("Jaguar", "vehicle", "A British car brand")

    for mode, _ in supported_modes(backend):
        animals = await backend.search_entities("Jaguar", type="animal", mode=mode)
        vehicles = await backend.search_entities("Jaguar", type="vehicle", mode=mode)
        assert ids(animals.items) == [cat.id], mode
        assert ids(vehicles.items) == [car.id], mode
    both = await backend.search_entities("Jaguar", mode=text_mode(backend))
    assert set(ids(both.items)) == {cat.id, car.id}


async def test_entity_search_limit_scores_and_modes(backend: MemoryBackend) -> None:
    for suffix in ("Alpha", "Beta", "Gamma", "Delta"):
        await backend.add_entity(f"Comet {suffix}", "concept", f"The comet called {suffix}")

    for mode, expected in supported_modes(backend):
        limited = await backend.search_entities("comet", limit=2, mode=mode)
        assert limited.search_type == expected, mode
        assert len(limited.items) == 2, mode
        everything = await backend.search_entities("comet", limit=200, mode=mode)
        assert len(everything.items) == 4, mode
        assert_ranked(everything)

    if not backend.capabilities.vector_search:
        with pytest.raises(NotSupportedError):
            await backend.search_entities("comet", mode="vector")


async def test_entity_text_search_without_matching_words_finds_nothing(
    backend: MemoryBackend,
) -> None:
    await backend.add_entity("Kestrel", "animal", "A small falcon that hovers")

    result = await backend.search_entities("xylophone", mode=text_mode(backend))

    assert result.search_type == "text"
    assert result.items == []


# -- search_user_messages ----------------------------------------------------------------


async def _user_with_history(
    backend: MemoryBackend,
) -> tuple[list[Conversation], Conversation, Conversation]:
    """User "u1": three older conversations about gardens plus a current one; user "u2":
    one conversation about gardens too."""
    older = []
    for i in range(3):
        conversation = await backend.create_conversation(user_id="u1")
        await backend.add_message(conversation.id, "user", f"My garden has {i + 2} tomato plants")
        await backend.add_message(conversation.id, "assistant", "Tomatoes like a sunny garden")
        await backend.add_message(conversation.id, "user", "Also, my bike needs new tyres")
        await backend.record_step(conversation.id, f"thinking about garden {i}", "answer")
        older.append(conversation)
        await tick()
    stranger = await backend.create_conversation(user_id="u2")
    await backend.add_message(stranger.id, "user", "My garden is full of weeds")
    await tick()
    current = await backend.create_conversation(user_id="u1")
    await backend.add_message(current.id, "user", "What did I say about my garden?")
    return older, current, stranger


async def test_search_user_messages_matches_per_conversation_search(
    backend: MemoryBackend,
) -> None:
    older, current, stranger = await _user_with_history(backend)

    if not backend.capabilities.user_message_search:
        with pytest.raises(NotSupportedError):
            await backend.search_user_messages("u1", "garden")
        return
    groups = await backend.search_user_messages(
        "u1",
        "garden",
        conversation_limit=5,
        per_conversation_limit=2,
        exclude_conversation_id=current.id,
        include_steps=True,
    )

    listed = [c.id for c in await backend.list_conversations(user_id="u1") if c.id != current.id]
    assert [g.conversation_id for g in groups] == listed
    assert set(listed) == {c.id for c in older}
    for group in groups:
        expected = await backend.search_messages(group.conversation_id, "garden", 2)
        assert ids(group.messages) == ids(expected.items)
        assert group.search_type == expected.search_type
        assert group.messages
        assert ids(group.steps) == ids(await backend.list_steps(group.conversation_id))
        assert group.steps
    all_found = {m.id for g in groups for m in g.messages}
    stranger_messages = {m.id for m in await backend.list_messages(stranger.id)}
    assert not all_found & stranger_messages
    current_messages = {m.id for m in await backend.list_messages(current.id)}
    assert not all_found & current_messages


async def test_search_user_messages_limits_and_steps_flag(backend: MemoryBackend) -> None:
    older, current, _ = await _user_with_history(backend)

    if not backend.capabilities.user_message_search:
        with pytest.raises(NotSupportedError):
            await backend.search_user_messages("u1", "garden", conversation_limit=2)
        return
    groups = await backend.search_user_messages(
        "u1",
        "garden",
        conversation_limit=2,
        per_conversation_limit=1,
        exclude_conversation_id=current.id,
        include_steps=False,
    )

    listed = [c.id for c in await backend.list_conversations(user_id="u1") if c.id != current.id]
    assert [g.conversation_id for g in groups] == listed[:2]
    for group in groups:
        assert len(group.messages) == 1
        assert group.steps == []
    everything = await backend.search_user_messages("u1", "garden", conversation_limit=10)
    assert [g.conversation_id for g in everything] == [
        c.id for c in await backend.list_conversations(user_id="u1")
    ]
    assert current.id in {g.conversation_id for g in everything}
    assert len(everything) == len(older) + 1


async def test_search_user_messages_for_unknown_user_is_empty(backend: MemoryBackend) -> None:
    await _user_with_history(backend)

    if not backend.capabilities.user_message_search:
        with pytest.raises(NotSupportedError):
            await backend.search_user_messages("nobody", "garden")
        return
    assert await backend.search_user_messages("nobody", "garden") == []


# -- robustness of the search paths -------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        'Lisbon"',
        "Lisbon AND (trams",
        "Lisbon* NOT -trams",
        "lisbon? {near} ^col: +x",
        "C++ / Lisbon's",
    ],
)
async def test_query_syntax_characters_are_plain_text(backend: MemoryBackend, query: str) -> None:
    here, hits, _ = await _lisbon(backend)
    await backend.add_entity("Lisbon", "location", "Capital of Portugal")

    for mode, expected in supported_modes(backend):
        result = await backend.search_messages(here.id, query, limit=50, mode=mode)
        assert result.search_type == expected
        assert {m.id for m in hits} & set(ids(result.items)), (mode, query)
        entities = await backend.search_entities(query, mode=mode)
        assert [e.name for e in entities.items] == ["Lisbon"], (mode, query)


async def test_text_search_ignores_case_and_handles_unicode(backend: MemoryBackend) -> None:
    conversation = await backend.create_conversation()
    zurich = await backend.add_message(conversation.id, "user", "We moved to Zürich in 2019")
    cafe = await backend.add_message(conversation.id, "user", "The CAFÉ downstairs is great")
    mode = text_mode(backend)

    assert ids((await backend.search_messages(conversation.id, "zürich", mode=mode)).items) == [
        zurich.id
    ]
    assert ids((await backend.search_messages(conversation.id, "ZÜRICH", mode=mode)).items) == [
        zurich.id
    ]
    assert ids((await backend.search_messages(conversation.id, "café", mode=mode)).items) == [
        cafe.id
    ]


async def test_limit_applies_after_conversation_scope(backend: MemoryBackend) -> None:
    """Many better matches elsewhere must not crowd a conversation's own hits out."""
    crowd = await backend.create_conversation(user_id="u")
    await backend.add_messages(
        crowd.id,
        [NewMessage(role="user", content=f"Rocket launch rocket {i} rocket") for i in range(60)],
    )
    mine = await backend.create_conversation(user_id="u")
    own = await backend.add_messages(
        mine.id,
        [
            NewMessage(role="user", content="The rocket was late"),
            NewMessage(role="user", content="I prefer trains to rockets"),
            NewMessage(role="assistant", content="Rockets are loud"),
        ],
    )

    for mode, _ in supported_modes(backend):
        result = await backend.search_messages(mine.id, "rocket launch", limit=3, mode=mode)
        assert set(ids(result.items)) == set(ids(own)), mode


async def test_entity_limit_applies_after_type_filter(backend: MemoryBackend) -> None:
    """Many better matches of another type must not crowd the filtered type out."""
    for i in range(40):
        await backend.add_entity(f"Rocket engine {i}", "machine", "A rocket engine")
    wanted = [
        await backend.add_entity("Rocket Man", "song", "A song about a rocket"),
        await backend.add_entity("Space Oddity", "song", "A song about spaceflight"),
    ]

    for mode, _ in supported_modes(backend):
        result = await backend.search_entities("rocket", type="song", limit=2, mode=mode)
        if mode == "text" or (mode is None and not backend.capabilities.vector_search):
            assert ids(result.items) == [wanted[0].id], mode
        else:
            assert set(ids(result.items)) == set(ids(wanted)), mode
        assert all(e.type == "song" for e in result.items)


async def test_search_user_messages_forgets_deleted_conversations(
    backend: MemoryBackend,
) -> None:
    older, _, _ = await _user_with_history(backend)
    await backend.delete_conversation(older[0].id)

    if not backend.capabilities.user_message_search:
        with pytest.raises(NotSupportedError):
            await backend.search_user_messages("u1", "garden")
        return
    groups = await backend.search_user_messages("u1", "garden", conversation_limit=10)

    assert older[0].id not in [g.conversation_id for g in groups]
    assert [g.conversation_id for g in groups] == ids(
        await backend.list_conversations(user_id="u1")
    )
