"""What a hit or a fact is evidence *of*: the gate's three rules beyond scores
(``nams_local.retrieval_scores``), on small stores over the real engine (MiniLM vectors).

- an entity opens a block on its score only if it says something (not a bare name) and
  can be the answer (no place, role or thing for a "who" question);
- a shared word is lexical support only when it has the question's owner ("my
  birthday" is not "Lars's birthday");
- the user's own graph facts open a block only when they hold every content word of the
  question (``WORKS_AT`` answers "Which company do I work for?", not "What is my job
  title?").

Each engine test first shows the hit or fact is there and would have opened the block
under the score or relation test alone, so each assertion can fail.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import pytest

from backends.sqlite import SQLiteBackend
from nams_local import NewMessage, default_embedder
from nams_local.retrieval import (
    DEFAULT_RELEVANCE_GATE,
    MemoryHit,
    RetrievalOptions,
    retrieve_memories,
)
from nams_local.retrieval_scores import Evidence, Relevance
from nams_local.retrieval_terms import others_terms, own_terms
from nams_local.retrieval_time import type_relevance
from nams_local.scope import Scope
from tests.data.unrelated_chat import UNRELATED_CHAT

USER = Scope(user_id="alex")
GATES = Relevance(0.3, 0.675, 0.55)
ROLE = "designer — The user's job title."
LARS = "It is Lars's birthday on Monday; any gift ideas for someone who loves kayaking?"
MINE = "My birthday is in November and I never know how to celebrate it."
JOB = "I work at Blue Harbor, the shipping company."
HOME = "I moved to Bangalore in May."


def _shown(hits: Sequence[MemoryHit]) -> list[str]:
    return [h.content for h in hits]


# -- pure rules -------------------------------------------------------------------------------
def test_a_bare_name_or_a_non_agent_entity_does_not_stand_alone() -> None:
    bare = Evidence(0.7, "Melbourne", entity=True, entity_type="location", bare=True)
    role = Evidence(0.75, ROLE, entity=True, entity_type="Role")
    person = Evidence(0.75, "Elif Okafor — The user's manager.", entity=True, entity_type="Person")
    assert not GATES.opens("Which city am I living in at the moment?", [bare])
    assert GATES.opens("Which city am I living in at the moment?", [(0.7, "Melbourne")])
    assert not GATES.opens("Who is my boss?", [role])
    assert GATES.opens("What is my job title?", [role])  # not a "who" question
    assert GATES.opens("Who is my boss?", [person])
    # A bare name still gives lexical support: it shares the question's rare word.
    named = Evidence(0.6, "Porto", entity=True, entity_type="location", bare=True)
    assert GATES.opens("Is Porto the city I live in?", [named])


def test_a_word_owned_by_someone_else_is_no_support() -> None:
    assert own_terms("When is my birthday?") == {"birth"}
    assert others_terms(LARS) == {"birth"}
    assert others_terms("It's my birthday and Lars's birthday") == set()  # also the speaker's
    assert others_terms("That's birthday cake") == set()  # a contraction, not an owner
    assert not GATES.opens("When is my birthday?", [(0.63, LARS)])
    assert GATES.opens("When is Lars's birthday?", [(0.63, LARS)])
    assert GATES.opens("When is my birthday?", [(0.6, MINE)])
    # Lars's mention no longer makes "birthday" common among the hits: the user's opens.
    assert GATES.opens("When is my birthday?", [(0.6, MINE), (0.63, LARS)])


def test_user_facts_must_hold_every_content_word_of_the_question() -> None:
    works = [("WORKS_AT", "(alex)-[WORKS_AT]->(Blue Harbor)")]
    assert type_relevance("WORKS_AT", "What is my job title?") > 0  # "job" points at it
    assert not GATES.facts_open("What is my job title?", works)
    assert GATES.facts_open("Which company do I work for now?", works)
    assert GATES.facts_open("Do I still work at Blue Harbor?", works)  # a name of the fact
    lives = [("LIVES_IN", "(Anouk)-[LIVES_IN]->(Nagasaki)")]
    asked = "Where is my uncle moving to?"
    assert not GATES.facts_open(asked, lives)
    tie = [(0.64, "My uncle Anouk came for dinner and we talked for hours.")]
    assert GATES.facts_open(asked, lives, tie)  # a hit ties "uncle" to Anouk
    assert not GATES.facts_open(asked, lives, [(0.2, tie[0][1])])  # below the floor
    assert not GATES.facts_open("Which instrument do I play?", works)
    assert Relevance().facts_open("anything", [])  # gate off: no test


# -- on the engine ------------------------------------------------------------------------------
@pytest.fixture
async def store() -> AsyncIterator[tuple[SQLiteBackend, str]]:
    """Unrelated chat, someone else's birthday, the user's job and move (extracted as the
    user's WORKS_AT and LIVES_IN), a role entity and a bare city."""
    async with SQLiteBackend(":memory:", embedder=default_embedder()) as backend:
        conv = await backend.create_conversation("alex")
        lines = [*UNRELATED_CHAT[:40], LARS, JOB, HOME]
        await backend.add_messages(conv.id, [NewMessage(role="user", content=t) for t in lines])
        await backend.add_entity("designer", "Role", "The user's job title.")
        await backend.add_entity("Melbourne", "location")
        if backend.store.vector_lane is not None:  # a busy machine embeds slower than reads wait
            await backend.store.vector_lane.drained()
        yield backend, conv.id


async def _block(store: tuple[SQLiteBackend, str], query: str) -> list[str]:
    backend, conv = store
    return _shown(await retrieve_memories(backend, USER, conv, query, 5))


async def _entity_score(backend: SQLiteBackend, query: str, text: str) -> float:
    found = await backend.search_entities(query, limit=10)
    return max((e.score or 0.0) for e in found.items if text.startswith(e.name))


async def test_an_on_topic_entity_that_cannot_answer_opens_no_block(
    store: tuple[SQLiteBackend, str],
) -> None:
    backend, _ = store
    query = "Who is my boss?"
    assert await _entity_score(backend, query, ROLE) >= DEFAULT_RELEVANCE_GATE
    assert await _block(store, query) == []
    assert ROLE in await _block(store, "What is my job title?")  # it answers that one


async def test_someone_elses_birthday_is_no_answer_to_mine(
    store: tuple[SQLiteBackend, str],
) -> None:
    backend, conv = store
    query = "When is my birthday?"
    found = await backend.search_messages(conv, query, 5)
    lars = next(m.score or 0.0 for m in found.items if m.content == LARS)
    assert GATES.lexical_gate <= lars < GATES.gate  # it would open on "birthday" alone
    assert await _block(store, query) == []
    assert LARS in await _block(store, "When is Lars's birthday?")


async def test_a_matching_user_fact_opens_and_a_mismatched_one_does_not(
    store: tuple[SQLiteBackend, str],
) -> None:
    company = await _block(store, "Which company do I work for now?")
    assert "(alex)-[WORKS_AT]->(Blue Harbor)" in company
    assert await _block(store, "What is my job title?") != []  # the role entity answers it
    backend, conv = store
    await backend.delete_entity((await backend.search_entities("designer", "Role", 1)).items[0].id)
    title = await retrieve_memories(backend, USER, conv, "What is my job title?", 5)
    assert title == []  # WORKS_AT is named by "job" but holds no title


async def test_a_nonsense_query_yields_nothing(store: tuple[SQLiteBackend, str]) -> None:
    assert await _block(store, "zzqxv-nothing-matches") == []
    backend, conv = store
    keep_all = RetrievalOptions(relevance_floor=0.0, relevance_gate=0.0)
    nearest = await retrieve_memories(backend, USER, conv, "zzqxv-nothing-matches", 5, keep_all)
    assert len(nearest) == 5


# -- whether a block opens does not depend on how many hits are shown ---------------------------
BEDS = tuple(
    f"In {month} we put {crop} in the raised bed by the shed."
    for month, crop in (
        ("April", "leeks"),
        ("February", "rhubarb"),
        ("June", "courgettes"),
        ("March", "onions"),
        ("May", "beans"),
        ("July", "kale"),
        ("August", "garlic"),
        ("October", "shallots"),
    )
)
TRAFFIC = (
    "We drove back on Sunday and the traffic on the ring road was awful, "
    "the worst jam we have had since April."
)


async def test_more_hits_shown_do_not_close_a_block_fewer_opened() -> None:
    async with SQLiteBackend(":memory:", embedder=default_embedder(), extraction="off") as backend:
        conv = await backend.create_conversation("alex")
        lines = [*UNRELATED_CHAT[:40], *BEDS, TRAFFIC]
        await backend.add_messages(conv.id, [NewMessage(role="user", content=t) for t in lines])
        if backend.store.vector_lane is not None:
            await backend.store.vector_lane.drained()
        query = "What did I plant in April?"
        ranked = [m.content for m in (await backend.search_messages(conv.id, query, 10)).items]
        assert ranked[0] == BEDS[0] and TRAFFIC in ranked[5:]  # a 2nd "April" past the 5th hit
        five = _shown(await retrieve_memories(backend, USER, conv.id, query, 5))
        ten = _shown(await retrieve_memories(backend, USER, conv.id, query, 10))
    assert BEDS[0] in five  # "april" is in one of the first five hits: support
    assert BEDS[0] in ten and len(ten) > len(five)  # counted over all ten, it was in two
