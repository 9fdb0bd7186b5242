"""The engine's ranking rules, each on a small fixture: scores that mean the same in every
search, passage vectors for facts buried in long messages, and their bookkeeping."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from backends.sqlite import SQLiteBackend, role_prior
from backends.sqlite.passages import MAX_PASSAGES, STRIDE, passages
from nams_local import NewMessage, default_embedder
from nams_local.models import SearchMode
from nams_local.retrieval import DEFAULT_RELEVANCE_FLOOR
from tests.data.unrelated_chat import UNRELATED_CHAT

BURIED = (
    "The trams were late again this morning and the office coffee machine is broken. "
    "I spent most of the afternoon fixing a flaky test in the billing service. "
    "Oh, and we adopted a beagle puppy last weekend and called him Biscuit. "
    "Tomorrow I have three meetings back to back about the quarterly roadmap. "
    "The canteen had a decent lentil soup for once."
)


async def _fill(backend: SQLiteBackend, lines: list[str]) -> str:
    conv = await backend.create_conversation("u1")
    for start in range(0, len(lines), 100):
        batch = [NewMessage(role="user", content=t) for t in lines[start : start + 100]]
        await backend.add_messages(conv.id, batch)
    lane = backend.store.vector_lane
    if lane is not None:  # every vector stored (a busy machine may embed slower than reads wait)
        await lane.drained()
    return conv.id


def test_a_short_message_has_no_passages_and_a_long_one_one_per_sentence() -> None:
    assert passages("I live in Delhi. Since May.") == []
    assert (
        passages(BURIED)[2]
        == "Oh, and we adopted a beagle puppy last weekend and called him Biscuit."
    )
    assert len(passages(BURIED)) == 5


def test_a_very_long_message_is_grouped_into_at_most_max_passages_windows() -> None:
    sentences = [f"Sentence number {i} talks about topic {i} at length." for i in range(20)]
    found = passages(" ".join(sentences))
    assert len(found) == MAX_PASSAGES
    assert " ".join(found) == " ".join(sentences)  # nothing lost, order kept


@pytest.mark.parametrize("mode", ["vector", None])
async def test_a_fact_buried_in_a_long_message_is_found(mode: str | None) -> None:
    lines = [*UNRELATED_CHAT[:90], BURIED, *UNRELATED_CHAT[90:]]
    async with SQLiteBackend(":memory:", embedder=default_embedder()) as backend:
        conv = await _fill(backend, lines)
        found = await backend.search_messages(conv, "What is my dog's name?", 3, mode)  # type: ignore[arg-type]
    assert BURIED in [m.content for m in found.items]
    assert len({m.id for m in found.items}) == len(found.items)  # one hit per message


async def test_passage_rows_are_written_and_deleted_with_their_message() -> None:
    async with SQLiteBackend(
        ":memory:", embedder=default_embedder(), vector_index="numpy"
    ) as backend:
        conv = await _fill(backend, [BURIED, "A short one."])
        await backend.search_messages(conv, "dog", 2)  # waits for the conversation's vectors

        store = backend.store

        def rowids() -> list[int]:
            def read() -> list[int]:
                return [
                    int(r) for (r,) in store.conn.execute(text("SELECT pk FROM messages_vectors"))
                ]

            return store.run_sync(read)

        stored = rowids()
        assert len(stored) == 1 + len(passages(BURIED)) + 1
        assert len({r % STRIDE for r in stored}) == 2
        await backend.delete_conversation(conv)
        assert rowids() == []


async def test_a_nonsense_query_scores_below_the_floor_and_a_real_one_above() -> None:
    lines = [*UNRELATED_CHAT[:60], "We moved into a small flat in Porto in the spring."]
    async with SQLiteBackend(":memory:", embedder=default_embedder()) as backend:
        conv = await _fill(backend, lines)
        nonsense = await backend.search_messages(conv, "zzqxv-nothing-matches", 5)
        real = await backend.search_messages(conv, "Which city did we move into a flat in?", 5)
    assert nonsense.items, "vector search always returns its nearest"
    assert max(m.score or 0.0 for m in nonsense.items) < DEFAULT_RELEVANCE_FLOOR
    assert real.items[0].content == lines[-1]
    assert (real.items[0].score or 0.0) >= DEFAULT_RELEVANCE_FLOOR


async def test_hybrid_scores_compare_across_searches_and_text_ones_keep_the_contract() -> None:
    """In hybrid mode a hit covering the whole query outscores the same hit found by a query
    it only partly covers; text-only search still scores its best hit 1.0 (the contract)."""
    lines = [*UNRELATED_CHAT[:40], "Neovim is my editor of choice."]
    async with SQLiteBackend(":memory:", embedder=default_embedder()) as backend:
        conv = await _fill(backend, lines)
        full = await backend.search_messages(conv, "Neovim editor", 3)
        partial = await backend.search_messages(conv, "Neovim zzqxv qqwrt plover", 3)
        text_only = await backend.search_messages(conv, "Neovim zzqxv qqwrt plover", 3, "text")
    assert full.items[0].content == partial.items[0].content == lines[-1]
    assert (partial.items[0].score or 0.0) < (full.items[0].score or 0.0) <= 1.0
    assert text_only.items[0].score == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("query", "about"),
    [
        ("Which company do I work for now?", True),
        ("Where's my passport?", True),
        ("what do i do on thursdays", True),
        ("I work at Harbourco and live in Lisbon", False),
        ("What did you suggest for dinner?", False),
        ("What did I ask you to remind me about?", False),
        ("What is the capital of France?", False),
    ],
)
def test_a_question_is_about_the_user_when_first_person_not_addressed_to_the_assistant(
    query: str, about: bool
) -> None:
    assert role_prior.about_the_user(query) is about


@pytest.mark.parametrize("mode", ["text", "vector", "hybrid"])
async def test_a_question_about_the_user_ranks_their_words_above_the_assistants(
    mode: SearchMode,
) -> None:
    """The same words said by both: without the prior the later message (the assistant's)
    wins the tie; about the user, the user's; addressed to the assistant, as before."""
    said = "The new office is in Lisbon, near the river."
    async with SQLiteBackend(":memory:", embedder=default_embedder()) as backend:
        conv = await backend.create_conversation("u1")
        await backend.add_messages(
            conv.id,
            [
                *(NewMessage(role="user", content=t) for t in UNRELATED_CHAT[:30]),
                NewMessage(role="user", content=said),
                NewMessage(role="assistant", content=said),
            ],
        )
        mine = await backend.search_messages(conv.id, "Where is my new office?", 2, mode)
        yours = await backend.search_messages(conv.id, "Where did you say the office is?", 2, mode)
    assert [m.role for m in mine.items] == ["user", "assistant"]
    assert [m.content for m in mine.items] == [said, said]
    if mode != "text":  # text-only divides by the best hit (the contract), which is 1.0
        assert (mine.items[1].score or 0.0) == pytest.approx(
            (mine.items[0].score or 0.0) * role_prior.ASSISTANT_PRIOR
        )
    assert [m.role for m in yours.items] == ["assistant", "user"]
    assert yours.items[0].score == yours.items[1].score


async def test_a_month_named_in_the_question_ranks_that_months_turn_first() -> None:
    """The household set's temporal kind on a small fixture: the same thing each month,
    each turn naming its month; the question's month is a text cue the hybrid score
    honours (vector search alone nearly ties February and March here)."""
    months = {
        "January": "Back in January I was reading Middlemarch, on the bus every morning.",
        "February": "Back in February I was reading Dune, on the bus every morning.",
        "March": "Back in March I was reading Beloved, on the bus every morning.",
    }
    lines = [*UNRELATED_CHAT[:40]]
    for at, line in zip((12, 20, 35), months.values(), strict=True):
        lines.insert(at, line)
    async with SQLiteBackend(":memory:", embedder=default_embedder()) as backend:
        conv = await _fill(backend, lines)
        found = await backend.search_messages(conv, "What was I reading in February?", 3)
    assert found.items[0].content == months["February"]
    assert (found.items[1].score or 0.0) < (found.items[0].score or 0.0)


async def test_a_multi_hop_pair_is_retrieved_together() -> None:
    """Who the uncle is and where that person is moving, said in two turns far apart: a
    question about the uncle's move finds both, ahead of everything else."""
    who = "My uncle Teodor came for dinner and we talked for hours."
    where = "Teodor is moving to Tromsø in the autumn, big change for them."
    lines = [*UNRELATED_CHAT[:40]]
    lines.insert(5, who)
    lines.insert(30, where)
    async with SQLiteBackend(":memory:", embedder=default_embedder()) as backend:
        conv = await _fill(backend, lines)
        found = await backend.search_messages(conv, "Where is my uncle moving to?", 5)
    assert {m.content for m in found.items[:2]} == {who, where}
