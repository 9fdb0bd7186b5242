""" "Nothing relevant" as an answer: the relevance floor of retrieval.

On the local engine (scores that compare across queries) a question the memory cannot
answer gets no block, while an answerable one keeps its evidence. Through the hosted
client, whose backend does not promise comparable scores, every hit is kept, as the
provider keeps them.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from backends.hosted import HostedBackend
from backends.sqlite import SQLiteBackend
from nams_local import NewMessage, default_embedder
from nams_local.retrieval import DEFAULT_RELEVANCE_GATE, RetrievalOptions, retrieve_memories
from nams_local.scope import Scope
from nams_local.server.app import create_app
from tests.asgi import hosted_in_process
from tests.data.unrelated_chat import UNRELATED_CHAT
from tests.recording_logger import RecordingLogger

USER = Scope(user_id="alex")
FACT = "We moved into a small flat in Porto in the spring."


@pytest.fixture
async def engine_with_vectors() -> AsyncIterator[SQLiteBackend]:
    async with SQLiteBackend(":memory:", embedder=default_embedder(), extraction="off") as backend:
        yield backend


async def _conversation(backend: SQLiteBackend | HostedBackend, engine: SQLiteBackend) -> str:
    conv = await backend.create_conversation("alex")
    lines = [*UNRELATED_CHAT[:40], FACT]
    await backend.add_messages(conv.id, [NewMessage(role="user", content=t) for t in lines])
    await backend.add_entity("Porto", "Location", "City the user lives in.")
    if engine.store.vector_lane is not None:  # a busy machine embeds slower than reads wait
        await engine.store.vector_lane.drained()
    return conv.id


async def test_a_nonsense_query_gets_no_memories(engine_with_vectors: SQLiteBackend) -> None:
    logger = RecordingLogger()
    conv = await _conversation(engine_with_vectors, engine_with_vectors)
    options = RetrievalOptions(logger=logger)
    hits = await retrieve_memories(
        engine_with_vectors, USER, conv, "zzqxv-nothing-matches", 5, options
    )
    assert hits == []
    city = await retrieve_memories(
        engine_with_vectors, USER, conv, "Which city do I live in?", 5, options
    )
    assert "Porto — City the user lives in." in [h.content for h in city]
    flat = await retrieve_memories(
        engine_with_vectors, USER, conv, "Which city did we move into a flat in?", 5, options
    )
    assert FACT in [h.content for h in flat]
    answer = [*city, *flat]
    assert all(h.relevance is not None and h.relevance >= options.relevance_floor for h in answer)
    assert logger.records == []


async def test_a_floor_and_gate_of_zero_keep_the_nearest(
    engine_with_vectors: SQLiteBackend,
) -> None:
    conv = await _conversation(engine_with_vectors, engine_with_vectors)
    options = RetrievalOptions(relevance_floor=0.0, relevance_gate=0.0)
    hits = await retrieve_memories(
        engine_with_vectors, USER, conv, "zzqxv-nothing-matches", 5, options
    )
    assert len(hits) == 5


async def test_the_hosted_client_keeps_every_hit(engine_with_vectors: SQLiteBackend) -> None:
    async with hosted_in_process(
        create_app(engine_with_vectors), f"floor-{uuid.uuid4().hex}"
    ) as client:
        assert client.capabilities.relevance_scores is False
        conv = await _conversation(client, engine_with_vectors)
        hits = await retrieve_memories(client, USER, conv, "zzqxv-nothing-matches", 5)
    assert len(hits) == 5


# -- the gate: a block opens only when its best scored hit looks like an answer ---------------
PORTO = "We moved into a small flat in Porto in the spring."
TRAMS = "The trams in Porto are so much better than where I grew up."
BANGALORE = "I moved to Bangalore in May."
BIRTHDAY = "It is Dev's birthday on Monday; any gift ideas for someone who loves kayaking?"


@pytest.fixture
async def gated() -> AsyncIterator[tuple[SQLiteBackend, str]]:
    """Unrelated chat, two lines about Porto, one about Bangalore (extracted as the user's
    LIVES_IN), one about someone else's birthday."""
    async with SQLiteBackend(":memory:", embedder=default_embedder()) as backend:
        conv = await backend.create_conversation("alex")
        lines = [*UNRELATED_CHAT[:40], PORTO, TRAMS, BIRTHDAY, BANGALORE]
        await backend.add_messages(conv.id, [NewMessage(role="user", content=t) for t in lines])
        if backend.store.vector_lane is not None:
            await backend.store.vector_lane.drained()
        yield backend, conv.id


async def test_an_open_block_keeps_weaker_evidence_a_high_floor_would_drop(
    gated: tuple[SQLiteBackend, str],
) -> None:
    backend, conv = gated
    query = "Which city did we move into a flat in?"
    shown = [h.content for h in await retrieve_memories(backend, USER, conv, query, 8)]
    assert PORTO in shown and TRAMS in shown  # the strong hit opened it; the weak one came along
    high_floor = RetrievalOptions(relevance_floor=DEFAULT_RELEVANCE_GATE, relevance_gate=0.0)
    alone = [h.content for h in await retrieve_memories(backend, USER, conv, query, 8, high_floor)]
    assert PORTO in alone and TRAMS not in alone


async def test_a_question_without_an_answer_gets_no_block_though_hits_clear_the_floor(
    gated: tuple[SQLiteBackend, str],
) -> None:
    backend, conv = gated
    query = "What is my sister called?"
    assert await retrieve_memories(backend, USER, conv, query, 5) == []
    floor_only = RetrievalOptions(relevance_gate=0.0)
    assert await retrieve_memories(backend, USER, conv, query, 5, floor_only) != []


async def test_a_user_fact_whose_relation_the_question_names_opens_the_block(
    gated: tuple[SQLiteBackend, str],
) -> None:
    backend, conv = gated
    hits = await retrieve_memories(backend, USER, conv, "Where do I live now?", 5)
    assert ("graph", "(alex)-[LIVES_IN]->(Bangalore)") in [(h.source, h.content) for h in hits]
    assert BANGALORE in [h.content for h in hits]  # scores below the gate, comes along
    unrelated = await retrieve_memories(backend, USER, conv, "Which instrument do I play?", 5)
    assert unrelated == []  # the same user fact is not shown where nothing asks for it
