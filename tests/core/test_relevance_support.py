"""The relevance gate's two tests, on a small store over the real engine (MiniLM vectors).

A block opens on one hit scoring at least the gate (a paraphrase sharing no word with the
question), or on one scoring at least the lower lexical gate that shares a question word
rare among the question's hits (a month, a name); an on-topic question whose shared word
is in most of its hits ("project") gets no block, and neither does a nonsense query.
Each rule is shown against the setting without it, so each assertion can fail.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from backends.sqlite import SQLiteBackend
from nams_local import NewMessage, default_embedder
from nams_local.retrieval import RetrievalOptions, retrieve_memories
from nams_local.retrieval_scores import Relevance
from nams_local.retrieval_terms import content_terms
from nams_local.retrieval_time import type_relevance
from nams_local.scope import Scope
from tests.data.unrelated_chat import UNRELATED_CHAT

USER = Scope(user_id="alex")
PROJECT = (
    "Can you help me plan the next steps for the latency project before Tuesday?",
    "Start by listing what the latency project still needs and who owns each piece.",
    "My manager wants the latency project finished early.",
    "The pricing project review moved to Thursday.",
)
APRIL = "In April we put leeks in the raised bed by the shed."
GARDEN = (
    "In February we put rhubarb in the raised bed by the shed.",
    APRIL,
    "In June we put courgettes in the raised bed by the shed.",
)
DOG = "I adopted a beagle puppy last weekend and called him Biscuit."
#: The rule before lexical support: one gate for every hit.
ONE_GATE = RetrievalOptions(relevance_gate=0.55, relevance_lexical_gate=0.0)
NO_LEXICAL = RetrievalOptions(relevance_lexical_gate=0.0)


@pytest.fixture
async def store() -> AsyncIterator[tuple[SQLiteBackend, str]]:
    async with SQLiteBackend(":memory:", embedder=default_embedder(), extraction="off") as backend:
        conv = await backend.create_conversation("alex")
        lines = [*UNRELATED_CHAT[:40], *PROJECT, *GARDEN, DOG]
        await backend.add_messages(conv.id, [NewMessage(role="user", content=t) for t in lines])
        if backend.store.vector_lane is not None:  # a busy machine embeds slower than reads wait
            await backend.store.vector_lane.drained()
        yield backend, conv.id


async def _shown(
    store: tuple[SQLiteBackend, str], query: str, options: RetrievalOptions | None = None
) -> list[str]:
    backend, conv = store
    return [h.content for h in await retrieve_memories(backend, USER, conv, query, 5, options)]


async def test_a_nonsense_query_gets_no_block(store: tuple[SQLiteBackend, str]) -> None:
    assert await _shown(store, "zzqxv-nothing-matches") == []
    keep_all = RetrievalOptions(relevance_floor=0.0, relevance_gate=0.0)
    assert len(await _shown(store, "zzqxv-nothing-matches", keep_all)) == 5  # the nearest


async def test_an_on_topic_question_whose_shared_word_is_common_gets_no_block(
    store: tuple[SQLiteBackend, str],
) -> None:
    query = "Which project am I leading?"  # nothing says who leads what
    assert await _shown(store, query) == []
    # One gate low enough for the answerable questions opens it on "project" alone.
    assert any("latency project" in text for text in await _shown(store, query, ONE_GATE))


async def test_a_rare_shared_word_opens_a_block_the_gate_alone_keeps_closed(
    store: tuple[SQLiteBackend, str],
) -> None:
    query = "What did I plant in April?"  # "april" is in one hit of the question's
    assert APRIL in await _shown(store, query)
    assert await _shown(store, query, NO_LEXICAL) == []


async def test_a_paraphrase_sharing_no_word_is_kept_by_its_vector(
    store: tuple[SQLiteBackend, str],
) -> None:
    query = "What is my dog's name?"
    assert not content_terms(query) & content_terms(DOG)
    assert DOG in await _shown(store, query)
    assert DOG in await _shown(store, query, NO_LEXICAL)  # the gate itself, not the support
    strict = RetrievalOptions(relevance_gate=0.8, relevance_lexical_gate=0.0)
    assert await _shown(store, query, strict) == []


def test_content_terms_drop_question_words_and_match_other_forms() -> None:
    assert content_terms("Which city am I living in at the moment?") == {"city", "liv"}
    assert content_terms("Porto is the city the user lives in.") >= {"city", "liv"}
    assert content_terms("What am I allergic to?") == content_terms("an allergy") == {"aller"}
    assert content_terms("What do I do now?") == set()


def test_a_word_in_more_than_one_hit_is_no_support() -> None:
    relevance = Relevance(0.3, 0.675, 0.55)
    april = [(0.6, APRIL), (0.4, GARDEN[0])]
    assert relevance.opens("What did I plant in April?", april)
    project = [(0.66, PROJECT[0]), (0.6, PROJECT[1]), (0.5, PROJECT[2])]
    assert not relevance.opens("Which project am I leading?", project)
    assert relevance.opens("Which project am I leading?", [(0.7, PROJECT[0])])
    assert not relevance.opens("What did I plant in April?", [(None, APRIL)])
    assert Relevance(0.3, 0.0, 0.55).opens("anything", [])  # gate 0: off


def test_for_a_living_names_a_job_not_a_home() -> None:
    asked = "What does my aunt do for a living?"
    assert type_relevance("LIVES_IN", asked) == 0  # opened blocks with someone's LIVES_IN
    assert type_relevance("LIVES_IN", "Which city am I living in now?") > 0
