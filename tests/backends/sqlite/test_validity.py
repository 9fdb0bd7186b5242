"""Facts that change: supersession on write, ended facts, out-of-order dates, moving back,
the opt-out flag, explicit invalidation, ``as_of`` reads and history (the real engine)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from backends.sqlite import SQLiteBackend
from nams_local import InvalidInputError, NotFoundError
from nams_local.models import EntityGraph, GraphEdge

Edge = tuple[str, str, str]


@pytest.fixture
async def memory() -> AsyncIterator[SQLiteBackend]:
    async with SQLiteBackend(":memory:", embeddings=False) as backend:
        yield backend


def _named(graph: EntityGraph) -> dict[Edge, list[GraphEdge]]:
    names = {node.id: node.name for node in graph.nodes}
    out: dict[Edge, list[GraphEdge]] = {}
    for edge in graph.edges:
        out.setdefault((names[edge.source], edge.type, names[edge.target]), []).append(edge)
    return out


async def _say(backend: SQLiteBackend, *texts: str) -> dict[Edge, list[GraphEdge]]:
    conversation = await backend.create_conversation(user_id="alex")
    await backend.add_message(conversation.id, "user", "My name is Alex.")
    for text in texts:
        await backend.add_message(conversation.id, "user", text)
    return _named(await backend.get_graph())


def _current(edges: dict[Edge, list[GraphEdge]]) -> set[Edge]:
    return {key for key, found in edges.items() if any(e.current for e in found)}


def _closed(edges: dict[Edge, list[GraphEdge]]) -> set[Edge]:
    return {key for key, found in edges.items() if any(not e.current for e in found)}


def _today() -> str:
    return datetime.now(UTC).date().isoformat()


# -- supersession on write ------------------------------------------------------------------
async def test_a_move_closes_the_old_home_and_opens_the_new(memory: SQLiteBackend) -> None:
    edges = await _say(
        memory, "Since March 2021 I have lived in Bangalore.", "I moved to Berlin in October 2026."
    )
    assert _current(edges) == {("Alex", "LIVES_IN", "Berlin")}
    (old,) = edges["Alex", "LIVES_IN", "Bangalore"]
    (new,) = edges["Alex", "LIVES_IN", "Berlin"]
    assert (old.valid_from, old.valid_until, old.superseded_by) == ("2021-03", "2026-10", new.id)
    assert (new.valid_from, new.valid_until) == ("2026-10", None)
    assert old.invalidated_at is not None and new.invalidated_at is None
    assert new.source_message_id is not None and new.recorded_at is not None


async def test_moved_from_x_to_y_in_one_sentence(memory: SQLiteBackend) -> None:
    edges = await _say(memory, "I moved from Bangalore to Berlin in May 2026.")
    assert _current(edges) == {("Alex", "LIVES_IN", "Berlin")}
    (old,) = edges["Alex", "LIVES_IN", "Bangalore"]
    assert (old.valid_from, old.valid_until) == (None, "2026-05")


async def test_used_to_closes_and_now_opens(memory: SQLiteBackend) -> None:
    edges = await _say(memory, "I used to live in Bangalore but now I live in Berlin.")
    assert _current(edges) == {("Alex", "LIVES_IN", "Berlin")}
    assert _closed(edges) == {("Alex", "LIVES_IN", "Bangalore")}


async def test_no_longer_closes_an_open_edge_without_opening_one(memory: SQLiteBackend) -> None:
    edges = await _say(memory, "I work at TechCorp.", "I no longer work at TechCorp.")
    assert _current(edges) == set()
    (job,) = edges["Alex", "WORKS_AT", "TechCorp"]
    assert job.valid_until == _today() and job.superseded_by is None


async def test_no_longer_then_joined_ends_the_old_job_when_the_new_began(
    memory: SQLiteBackend,
) -> None:
    edges = await _say(
        memory, "I work at TechCorp.", "I no longer work at TechCorp; I joined Acme in May 2026."
    )
    assert _current(edges) == {("Alex", "WORKS_AT", "Acme")}
    (old,) = edges["Alex", "WORKS_AT", "TechCorp"]
    assert old.valid_until == "2026-05"


@pytest.mark.parametrize(
    ("first", "ending", "edge"),
    [
        ("I work at TechCorp.", "I left TechCorp in June 2025.", ("Alex", "WORKS_AT", "TechCorp")),
        ("I work at TechCorp.", "I quit my job at TechCorp.", ("Alex", "WORKS_AT", "TechCorp")),
        ("I use Jira.", "I stopped using Jira.", ("Alex", "USES", "Jira")),
        ("My wife Priya is a doctor.", "My ex-wife Priya moved.", ("Priya", "MARRIED_TO", "Alex")),
        ("I work at Google.", "I don't work at Google anymore.", ("Alex", "WORKS_AT", "Google")),
    ],
)
async def test_ending_statements_close_the_edge(
    memory: SQLiteBackend, first: str, ending: str, edge: Edge
) -> None:
    before = await _say(memory, first)
    assert edge in _current(before)
    after = _named(await memory.get_graph())
    conversation = (await memory.list_conversations())[0]
    await memory.add_message(conversation.id, "user", ending)
    after = _named(await memory.get_graph())
    assert edge not in _current(after) and edge in _closed(after)
    assert len(after[edge]) == 1  # closed, never deleted nor doubled


async def test_left_with_a_date_records_when_it_ended(memory: SQLiteBackend) -> None:
    edges = await _say(memory, "I work at TechCorp.", "I left TechCorp in June 2025.")
    (job,) = edges["Alex", "WORKS_AT", "TechCorp"]
    assert job.valid_until == "2025-06"


async def test_an_ended_fact_never_stated_before_is_recorded_as_past(
    memory: SQLiteBackend,
) -> None:
    edges = await _say(memory, "I used to work at Initech.")
    assert _closed(edges) == {("Alex", "WORKS_AT", "Initech")}
    assert _current(edges) == set()


async def test_negation_closes_nothing(memory: SQLiteBackend) -> None:
    edges = await _say(memory, "I work at TechCorp.", "I never left TechCorp.", "I didn't quit.")
    assert _current(edges) == {("Alex", "WORKS_AT", "TechCorp")}
    assert _closed(edges) == set()


async def test_left_my_keys_is_not_leaving_a_job(memory: SQLiteBackend) -> None:
    edges = await _say(memory, "I work at TechCorp.", "I left my keys at TechCorp.")
    assert _current(edges) == {("Alex", "WORKS_AT", "TechCorp")}


async def test_multi_valued_types_never_close_on_their_own(memory: SQLiteBackend) -> None:
    edges = await _say(memory, "I use Python.", "I use Rust too.")
    assert _current(edges) == {("Alex", "USES", "Python"), ("Alex", "USES", "Rust")}


async def test_switched_from_closes_a_multi_valued_edge_explicitly(memory: SQLiteBackend) -> None:
    edges = await _say(memory, "I use VS Code.", "I switched from VS Code to Neovim.")
    assert _current(edges) == {("Alex", "USES", "Neovim")}
    assert _closed(edges) == {("Alex", "USES", "VS Code")}


async def test_prefers_x_over_y_ends_the_preference_for_y(memory: SQLiteBackend) -> None:
    """ "prefers X over Y" (issue 14): Y is no longer preferred, X is; a plain second
    preference ("I like Rust too") still adds one."""
    edges = await _say(memory, "I love Python.", "These days I prefer Rust over Python.")
    assert ("Alex", "PREFERS", "Rust") in _current(edges)
    assert ("Alex", "PREFERS", "Python") not in _current(edges)
    assert ("Alex", "PREFERS", "Python") in _closed(edges)
    edges = await _say(memory, "I also love Go.")
    assert {("Alex", "PREFERS", "Rust"), ("Alex", "PREFERS", "Go")} <= _current(edges)


async def test_an_identical_open_fact_is_reused(memory: SQLiteBackend) -> None:
    edges = await _say(memory, "I live in Berlin.", "I live in Berlin.", "I'm based in Berlin.")
    assert len(edges["Alex", "LIVES_IN", "Berlin"]) == 1


async def test_out_of_order_statements_are_ordered_by_valid_from(memory: SQLiteBackend) -> None:
    """The newer fact arrives first; the older one slots in before it, closed at once."""
    edges = await _say(
        memory, "I moved to Berlin in October 2026.", "Since March 2021 I have lived in Bangalore."
    )
    assert _current(edges) == {("Alex", "LIVES_IN", "Berlin")}
    (old,) = edges["Alex", "LIVES_IN", "Bangalore"]
    (new,) = edges["Alex", "LIVES_IN", "Berlin"]
    assert (old.valid_from, old.valid_until, old.superseded_by) == ("2021-03", "2026-10", new.id)


async def test_a_statement_inside_an_interval_splits_it(memory: SQLiteBackend) -> None:
    edges = await _say(
        memory,
        "Since 2015 I have lived in Chennai.",
        "I moved to Berlin in 2026.",
        "I moved to Bangalore in 2021.",
    )
    spans = {key[2]: (e.valid_from, e.valid_until) for key, (e,) in edges.items()}
    assert spans == {
        "Chennai": ("2015", "2021"),
        "Bangalore": ("2021", "2026"),
        "Berlin": ("2026", None),
    }


async def test_moving_back_opens_a_new_interval(memory: SQLiteBackend) -> None:
    edges = await _say(
        memory,
        "I moved to Bangalore in 2019.",
        "I moved to Berlin in 2022.",
        "I moved back to Bangalore in 2025.",
    )
    bangalore = sorted(edges["Alex", "LIVES_IN", "Bangalore"], key=lambda e: e.valid_from or "")
    assert [(e.valid_from, e.valid_until) for e in bangalore] == [("2019", "2022"), ("2025", None)]
    (berlin,) = edges["Alex", "LIVES_IN", "Berlin"]
    assert (berlin.valid_from, berlin.valid_until) == ("2022", "2025")


async def test_non_english_text_closes_nothing(memory: SQLiteBackend) -> None:
    """No English rule may fire on other languages (whose case rules differ, or which have
    no case at all): the current fact stays current and nothing new is dated."""
    edges = await _say(
        memory,
        "I live in Bangalore.",
        "Ich bin von Bangalore nach Berlin gezogen, ich wohne nicht mehr in Bangalore.",
        "Me mudé de Bangalore a Berlín en mayo; ya no vivo en Bangalore.",
        "J'ai quitté Bangalore le mois dernier.",
        "मैं बैंगलोर छोड़कर बर्लिन चला गया।",
        "Я переехал из Бангалора в Берлин в мае.",
        "私はバンガロールからベルリンに引っ越しました。",
    )
    assert _closed(edges) == set()
    assert ("Alex", "LIVES_IN", "Bangalore") in _current(edges)
    assert all(e.valid_from is None for found in edges.values() for e in found)


# -- explicit writes --------------------------------------------------------------------------
async def _people(memory: SQLiteBackend) -> tuple[str, str, str]:
    alex = await memory.add_entity("Alex", "person")
    bangalore = await memory.add_entity("Bangalore", "location")
    berlin = await memory.add_entity("Berlin", "location")
    return alex.id, bangalore.id, berlin.id


async def test_explicit_writes_supersede_by_the_same_rules(memory: SQLiteBackend) -> None:
    alex, bangalore, berlin = await _people(memory)
    old = await memory.add_relationship(alex, bangalore, "LIVES_IN", valid_from="2021-03")
    new = await memory.add_relationship(alex, berlin, "LIVES_IN", valid_from="2026-10")
    assert new.current and new.valid_from == "2026-10"
    closed = _named(await memory.get_graph())["Alex", "LIVES_IN", "Bangalore"][0]
    assert (closed.id, closed.valid_until, closed.superseded_by) == (old.id, "2026-10", new.id)
    again = await memory.add_relationship(alex, berlin, "LIVES_IN")
    assert again.id == new.id  # identical and open: reused


async def test_the_opt_out_flag_writes_as_is(memory: SQLiteBackend) -> None:
    alex, bangalore, berlin = await _people(memory)
    await memory.add_relationship(alex, bangalore, "LIVES_IN")
    await memory.add_relationship(alex, berlin, "LIVES_IN", supersede=False)
    edges = _named(await memory.get_graph())
    assert _current(edges) == {("Alex", "LIVES_IN", "Bangalore"), ("Alex", "LIVES_IN", "Berlin")}


async def test_single_valued_types_are_configurable() -> None:
    async with SQLiteBackend(
        ":memory:", embeddings=False, extraction="off", single_valued_types=["drives"]
    ) as memory:
        alex = (await memory.add_entity("Alex", "person")).id
        car = (await memory.add_entity("Golf", "tool")).id
        bike = (await memory.add_entity("Vespa", "tool")).id
        await memory.add_relationship(alex, car, "DRIVES")
        await memory.add_relationship(alex, bike, "drives")
        homes = [(await memory.add_entity(n, "location")).id for n in ("Oslo", "Rome")]
        for home in homes:  # LIVES_IN is not single-valued here
            await memory.add_relationship(alex, home, "LIVES_IN")
        edges = _named(await memory.get_graph())
        assert _current(edges) == {
            ("Alex", "drives", "Vespa"),
            ("Alex", "LIVES_IN", "Oslo"),
            ("Alex", "LIVES_IN", "Rome"),
        }


async def test_supersession_off_keeps_every_fact_current() -> None:
    async with SQLiteBackend(":memory:", embeddings=False, supersession=False) as memory:
        edges = await _say(memory, "I live in Bangalore.", "I moved to Berlin.")
        assert _current(edges) == {
            ("Alex", "LIVES_IN", "Bangalore"),
            ("Alex", "LIVES_IN", "Berlin"),
        }


async def test_invalidate_closes_without_deleting(memory: SQLiteBackend) -> None:
    alex, bangalore, _ = await _people(memory)
    edge = await memory.add_relationship(alex, bangalore, "LIVES_IN", valid_from="2021")
    closed = await memory.invalidate_relationship(edge.id, "2026-10")
    assert (closed.id, closed.current, closed.valid_until) == (edge.id, False, "2026-10")
    assert closed.invalidated_at is not None
    (kept,) = _named(await memory.get_graph())["Alex", "LIVES_IN", "Bangalore"]
    assert kept.valid_until == "2026-10"
    today = await memory.invalidate_relationship(edge.id)
    assert today.valid_until == _today()
    with pytest.raises(NotFoundError):
        await memory.invalidate_relationship("no-such-edge")
    with pytest.raises(InvalidInputError):
        await memory.invalidate_relationship(edge.id, "2019")  # before it began
    with pytest.raises(InvalidInputError):
        await memory.invalidate_relationship(edge.id, "last tuesday")


@pytest.mark.parametrize("bad", ["2021-13", "2021-02-30", "21-03", "soon", "2021-03-01T25:00"])
async def test_bad_dates_are_refused_with_nothing_written(memory: SQLiteBackend, bad: str) -> None:
    alex, bangalore, _ = await _people(memory)
    with pytest.raises(InvalidInputError):
        await memory.add_relationship(alex, bangalore, "LIVES_IN", valid_from=bad)
    with pytest.raises(InvalidInputError):
        await memory.get_graph(as_of=bad)
    assert (await memory.get_graph()).edges == []


async def test_until_before_from_is_refused(memory: SQLiteBackend) -> None:
    alex, bangalore, _ = await _people(memory)
    with pytest.raises(InvalidInputError):
        await memory.add_relationship(
            alex, bangalore, "LIVES_IN", valid_from="2024", valid_until="2021"
        )
    assert (await memory.get_graph()).edges == []


# -- reads ------------------------------------------------------------------------------------
async def test_as_of_reads_the_graph_at_a_date(memory: SQLiteBackend) -> None:
    alex, bangalore, berlin = await _people(memory)
    await memory.add_relationship(alex, bangalore, "LIVES_IN", valid_from="2021-03")
    await memory.add_relationship(alex, berlin, "LIVES_IN", valid_from="2026-10")

    async def homes(as_of: str | None, neighbourhood: bool = False) -> set[str]:
        graph = (
            await memory.entity_neighbourhood(alex, 1, as_of)
            if neighbourhood
            else await memory.get_graph(as_of)
        )
        return {edge[2] for edge in _named(graph)}

    assert await homes("2024-06") == {"Bangalore"}
    assert await homes("2026-10-05") == {"Berlin"}
    assert await homes("2020") == set()
    assert await homes(None) == {"Bangalore", "Berlin"}
    assert await homes("2024-06", neighbourhood=True) == {"Bangalore"}
    assert await homes("2027-01-01T00:00:00Z", neighbourhood=True) == {"Berlin"}


async def test_entity_reads_and_history_show_the_intervals(memory: SQLiteBackend) -> None:
    await _say(
        memory, "Since March 2021 I have lived in Bangalore.", "I moved to Berlin in October 2026."
    )
    alex = await memory.get_entity_by_name("Alex")
    assert alex is not None
    details = await memory.get_entity(alex.id)
    lives = {r.target_name: r for r in details.relationships if r.type == "LIVES_IN"}
    assert (lives["Bangalore"].valid_until, lives["Berlin"].current) == ("2026-10", True)
    history = await memory.get_entity_history(alex.id)
    assert history.changes is not None
    learned = [(c.target_name, c.valid_from, c.valid_until) for c in history.changes]
    assert learned == [("Bangalore", "2021-03", "2026-10"), ("Berlin", "2026-10", None)]
    assert all(c.recorded_at is not None for c in history.changes)


async def test_cypher_sees_validity_as_relationship_properties(memory: SQLiteBackend) -> None:
    await _say(
        memory, "Since March 2021 I have lived in Bangalore.", "I moved to Berlin in October 2026."
    )
    result = await memory.query(
        "MATCH (a:Entity)-[r:LIVES_IN]->(b:Entity) "
        "RETURN b.name AS place, r.valid_from AS since, r.valid_until AS until, "
        "r.current AS current ORDER BY since"
    )
    assert result.rows == [
        {"place": "Bangalore", "since": "2021-03", "until": "2026-10", "current": False},
        {"place": "Berlin", "since": "2026-10", "until": None, "current": True},
    ]


async def test_an_ending_told_first_gains_its_start_later(memory: SQLiteBackend) -> None:
    """ "I no longer work at Globex; I joined Gringotts in April 2025" told before "In
    August 2022 I joined Globex" and "Since September 2017 I work at Soylent": one Globex
    edge, 2022-08..2025-04, and the earlier job does not cut it."""
    edges = await _say(
        memory,
        "I no longer work at Globex; I joined Gringotts in April 2025.",
        "Since September 2017 I work at Soylent.",
        "In August 2022 I joined Globex.",
    )
    spans = {key[2]: [(e.valid_from, e.valid_until) for e in found] for key, found in edges.items()}
    assert spans == {
        "Globex": [("2022-08", "2025-04")],
        "Gringotts": [("2025-04", None)],
        "Soylent": [("2017-09", "2022-08")],
    }
