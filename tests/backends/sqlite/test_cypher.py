"""Read-only Cypher on the SQLite engine: the reads answer exactly, writes and bad Cypher are
``InvalidInputError`` and change nothing, and caller text never alters a query's shape."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from backends.sqlite import SQLiteBackend
from backends.sqlite.cypher_text import label_key
from nams_local.errors import InvalidInputError
from tests.cypher_support import BOBBY, READS, WRITES, Read, build_graph


@pytest.fixture
async def backend() -> AsyncIterator[SQLiteBackend]:
    engine = SQLiteBackend(":memory:", embeddings=False)
    try:
        yield engine
    finally:
        await engine.aclose()


@pytest.fixture
async def ids(backend: SQLiteBackend) -> dict[str, str]:
    return await build_graph(backend)


async def test_the_engine_reports_cypher_support(backend: SQLiteBackend) -> None:
    assert backend.capabilities.cypher_query


@pytest.mark.parametrize("read", READS, ids=lambda r: r.id)
async def test_reads_answer_columns_and_rows(
    backend: SQLiteBackend, ids: dict[str, str], read: Read
) -> None:
    result = await backend.query(read.cypher, read.params)
    assert (result.columns, result.rows) == (read.columns, read.rows)


async def test_a_node_is_its_property_map(backend: SQLiteBackend, ids: dict[str, str]) -> None:
    result = await backend.query('MATCH (p:Person {name: "Ada"})-[r:LIVES_IN]->() RETURN p, r')
    (row,) = result.rows
    ada, lives_in = row["p"], row["r"]
    assert (ada["id"], ada["type"], ada["born"], ada["description"]) == (
        ids["ada"],
        "person",
        "1815",
        "Mathematician",
    )
    assert not any(key.startswith("__") for key in ada)
    assert (lives_in["type"], lives_in["confidence"]) == ("LIVES_IN", 0.95)
    result.to_wire()  # JSON-encodable


async def test_merged_entities_are_invisible(backend: SQLiteBackend, ids: dict[str, str]) -> None:
    by_id = await backend.query("MATCH (e) WHERE e.id = $id RETURN e.name", {"id": ids["alias"]})
    assert by_id.rows == []
    people = await backend.query("MATCH (p:PERSON) RETURN p.name AS name ORDER BY name")
    assert [row["name"] for row in people.rows] == ["Ada", "Alan", "Grace"]


async def test_parameters_are_values_never_query_text(
    backend: SQLiteBackend, ids: dict[str, str]
) -> None:
    found = await backend.query("MATCH (e:Entity) WHERE e.name = $n RETURN e.id", {"n": BOBBY})
    assert found.rows == [{"e.id": ids["bobby"]}]
    injected = 'Ada"}) DETACH DELETE (n) MATCH (m {name: "x'
    assert (await backend.query("MATCH (e {name: $n}) RETURN e.id", {"n": injected})).rows == []
    listed = await backend.query(
        "MATCH (e:Concept) WHERE e.name IN $names RETURN e.name", {"names": [BOBBY, "nobody"]}
    )
    assert listed.rows == [{"e.name": BOBBY}]
    assert len(await backend.list_entities()) == 7


async def test_write_words_in_strings_and_comments_are_text(
    backend: SQLiteBackend, ids: dict[str, str]
) -> None:
    cypher = (
        "MATCH (e:Entity) // DELETE everything\n"
        "WHERE e.name STARTS WITH 'Robert\\'); DROP' OR e.name = \"CREATE\" "
        "RETURN e.id AS id"
    )
    assert (await backend.query(cypher)).rows == [{"id": ids["bobby"]}]


async def test_property_named_like_a_keyword_is_not_a_write(
    backend: SQLiteBackend, ids: dict[str, str]
) -> None:
    result = await backend.query("MATCH (e:Organization) RETURN e.set ORDER BY e.name LIMIT 1")
    assert result.rows == [{"e.set": None}]


@pytest.mark.parametrize("cypher", WRITES)
async def test_writes_are_refused_and_change_nothing(
    backend: SQLiteBackend, ids: dict[str, str], cypher: str
) -> None:
    before = await backend.get_graph()
    with pytest.raises(InvalidInputError, match="read-only"):
        await backend.query(cypher)
    assert await backend.get_graph() == before


@pytest.mark.parametrize(
    ("cypher", "params", "message"),
    [
        ("MATCH (n RETURN n", None, "syntax error at line 1, col 17"),
        ("MATCH (n)) RETURN n", None, "syntax"),
        ("MATCH (n) WHERE n.name = 'open RETURN n", None, "unterminated"),
        ("MATCH (n) RETURN", None, "syntax"),
        ("MATCH (n) WHERE n.name = RETURN n", None, "syntax"),
        ("MATCH (n)", None, "RETURN"),
        ("MATCH (n) RETURN n.name, n.name", None, "same name"),
        ("MATCH (n) WHERE n.name = $who RETURN n", None, r"\$who"),
        ("MATCH (n) WHERE n.name = $who RETURN n", {"who": object()}, r"\$who"),
        ("MATCH (n) WHERE n.x = $x RETURN n", {"x": float("nan")}, "finite"),
        ("MATCH (n) WHERE n.x = $x RETURN n", {"x": 2**64}, "64 bits"),
        ("MATCH (n) WHERE n.name = 'a\\qb' RETURN n", None, "escape"),
        ("MATCH (n) WHERE n.name = '\\uD83D' RETURN n", None, "surrogate"),
        ("MATCH (n) WHERE n.name = $x RETURN n", {"x": "\ud800"}, "surrogate"),
        ("MATCH (p) RETURN p.name LIMIT $n", {"n": 1.5}, "LIMIT"),
        ("MATCH (p) RETURN p.nope(1)", None, "Unknown function"),
        ("MATCH (p) RETURN p // " + "x" * 10_000, None, "too long"),
        ("MATCH (p) WHERE p.name IN $names RETURN p", {"names": ["x" * 999] * 1001}, "too long"),
        (
            "MATCH (p) RETURN $deep",
            {"deep": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]},
            "deep",
        ),
        ("MATCH (p) RETURN p.name FORMAT CSV", None, "FORMAT is not supported"),
        ("   ", None, "cypher is required"),
    ],
)
async def test_bad_cypher_is_invalid_input(
    backend: SQLiteBackend,
    ids: dict[str, str],
    cypher: str,
    params: dict[str, object] | None,
    message: str,
) -> None:
    with pytest.raises(InvalidInputError, match=message):
        await backend.query(cypher, params)


@pytest.mark.parametrize(
    "cypher",
    [
        "MATCH (n:person RETURN n",
        "MATCH (n:Person)-[:works_at]->(o) RETURN o.name AS x, n.`born` + AS y",
        "MATCH /* a comment */ (n:person) WHERE n.name = 'A\\'da' RETURN n.name n.x",
    ],
)
async def test_syntax_errors_quote_the_callers_own_query(
    backend: SQLiteBackend, ids: dict[str, str], cypher: str
) -> None:
    """The engine runs labels spelled one way and escapes decoded; an error never shows
    that rewrite, only the caller's text (block comments as spaces)."""
    with pytest.raises(InvalidInputError, match="syntax") as caught:
        await backend.query(cypher)
    quoted = caught.value.message.splitlines()[1].strip()
    plain = cypher.replace("/* a comment */", " " * len("/* a comment */"))
    assert quoted == plain.strip() or quoted in plain


async def test_a_query_sees_only_its_workspace(backend: SQLiteBackend, ids: dict[str, str]) -> None:
    other = backend.for_workspace("other")
    await other.add_entity("Zed", "person")
    everyone = await other.query("MATCH (p:Person) RETURN p.name")
    assert everyone.rows == [{"p.name": "Zed"}]


async def test_a_query_sees_writes_made_just_before(
    backend: SQLiteBackend, ids: dict[str, str]
) -> None:
    count = "MATCH (p:Person)-[:KNOWS]->(q) RETURN count(*) AS n"
    assert (await backend.query(count)).rows == [{"n": 1}]
    await backend.add_relationship(ids["grace"], ids["alan"], "KNOWS")
    assert (await backend.query(count)).rows == [{"n": 2}]
    await backend.delete_entity(ids["grace"])
    assert (await backend.query(count)).rows == [{"n": 1}]


@pytest.mark.parametrize(
    ("text", "key"),
    [("person", "PERSON"), ("Works at", "WORKS_AT"), ("3d model", "_3D_MODEL"), ("", "_")],
)
def test_label_key_is_one_spelling_for_every_casing(text: str, key: str) -> None:
    assert label_key(text) == key


async def test_aggregates_alone_answer_one_row_over_nothing(backend: SQLiteBackend) -> None:
    result = await backend.query(
        "MATCH (p:Person) RETURN count(p) AS n, collect(p.name) AS names, max(p.confidence)"
    )
    assert result.rows == [{"n": 0, "names": [], "max(p.confidence)": None}]
    grouped = await backend.query("MATCH (p:Person) RETURN p.type, count(*) AS n")
    assert grouped.rows == []


@pytest.mark.parametrize(
    ("cypher", "rows"),
    [
        (
            "MATCH (p:Person)-[:WORKS_AT]->(o) "
            "RETURN DISTINCT o.name AS employer ORDER BY employer",
            [{"employer": "Acme"}, {"employer": "Analytical Engines Ltd"}],
        ),
        (
            "MATCH (p:Person)-[:WORKS_AT]->(o) RETURN DISTINCT o.name ORDER BY o.name DESC",
            [{"o.name": "Analytical Engines Ltd"}, {"o.name": "Acme"}],
        ),
        (
            "MATCH (e:Entity) RETURN DISTINCT e.type ORDER BY e.type SKIP 1 LIMIT 2",
            [{"e.type": "concept"}, {"e.type": "location"}],
        ),
    ],
)
async def test_distinct_rows_then_skip_and_limit(
    backend: SQLiteBackend, ids: dict[str, str], cypher: str, rows: list[dict[str, str]]
) -> None:
    assert (await backend.query(cypher)).rows == rows


@pytest.mark.parametrize(
    ("cypher", "rows"),
    [
        (
            "MATCH (o:Organization)<-[:WORKS_AT]-(p) WHERE o.name = 'Acme' "
            "RETURN p.name ORDER BY p.name",
            [{"p.name": "Ada"}, {"p.name": "Alan"}],
        ),
        (
            "MATCH (p:Person) WHERE EXISTS { MATCH (p)-[:LIVES_IN]->(c) } RETURN p.name",
            [{"p.name": "Ada"}],
        ),
        (
            "MATCH /* CREATE */ (p:Person)\nMATCH (o:Organization) RETURN count(*) AS pairs",
            [{"pairs": 6}],
        ),
        (
            "MATCH (a:Person {name: 'Alan'})<-[*1..2]-(b) RETURN b.name",
            [{"b.name": "Ada"}],
        ),
        (
            "MATCH (p:Person) WHERE NOT p.description IS NULL "
            'RETURN toUpper(p.name) AS up, coalesce(p.description, "?") AS d ORDER BY up',
            [{"up": "ADA", "d": "Mathematician"}, {"up": "ALAN", "d": "Computer scientist"}],
        ),
    ],
)
async def test_more_supported_shapes(
    backend: SQLiteBackend, ids: dict[str, str], cypher: str, rows: list[dict[str, object]]
) -> None:
    assert (await backend.query(cypher)).rows == rows


async def test_cypher_escapes_decode_like_neo4j(
    backend: SQLiteBackend, ids: dict[str, str]
) -> None:
    """``\\uD83D\\uDE00`` (a UTF-16 pair) is the one character U+1F600, as in Neo4j."""
    cypher = "MATCH (e) WHERE e.name ENDS WITH '\\\"the \\\\ one\\\" \\uD83D\\uDE00' RETURN e.id"
    assert (await backend.query(cypher)).rows == [{"e.id": ids["bobby"]}]


async def test_limit_counts_every_match_of_a_small_graph() -> None:
    """The TCK's ``cypher_query`` scenario as the bridge asks it: three entities, one row."""
    engine = SQLiteBackend(":memory:", embeddings=False)
    try:
        for name in ("Ada", "Alan", "Acme"):
            await engine.add_entity(name, "thing")
        result = await engine.query("MATCH (n) RETURN count(n) AS total LIMIT 1")
        assert (result.columns, result.rows) == (["total"], [{"total": 3}])
    finally:
        await engine.aclose()


def _unordered(rows: list[dict[str, object]]) -> list[str]:
    """Rows whose order Cypher leaves open (no ORDER BY, collect), compared as sets."""
    return sorted(
        repr({k: sorted(v) if isinstance(v, list) else v for k, v in row.items()}) for row in rows
    )


@pytest.mark.parametrize(
    ("cypher", "rows"),
    [
        ("MATCH (n) RETURN count(*) AS total SKIP 0 LIMIT 1", [{"total": 7}]),
        ("MATCH (n) RETURN count(n) LIMIT 2", [{"count(n)": 7}]),
        (
            "MATCH (p:Person) RETURN sum(p.confidence) AS s, avg(p.confidence) AS a, "
            "min(p.name) AS lo, max(p.name) AS hi, collect(p.name) AS names LIMIT 1",
            [{"s": 3.0, "a": 1.0, "lo": "Ada", "hi": "Grace", "names": ["Ada", "Alan", "Grace"]}],
        ),
        (
            "MATCH (p:Person)-[:WORKS_AT]->(o) RETURN o.name AS org, count(p) AS n LIMIT 2",
            [{"org": "Acme", "n": 2}, {"org": "Analytical Engines Ltd", "n": 1}],
        ),
        (
            "MATCH (p:Person)-[:WORKS_AT]->(o) RETURN o.name AS org, collect(p.name) AS staff "
            "LIMIT 2",
            [
                {"org": "Acme", "staff": ["Ada", "Alan"]},
                {"org": "Analytical Engines Ltd", "staff": ["Grace"]},
            ],
        ),
        ("MATCH (n) RETURN DISTINCT count(n) AS total LIMIT 1", [{"total": 7}]),
    ],
)
async def test_limit_pages_rows_after_aggregation(
    backend: SQLiteBackend, ids: dict[str, str], cypher: str, rows: list[dict[str, object]]
) -> None:
    assert _unordered((await backend.query(cypher)).rows) == _unordered(rows)


@pytest.mark.parametrize(
    ("cypher", "rows"),
    [
        (
            "MATCH (p:Person)-[:WORKS_AT]->(o) RETURN o.name AS org, count(p) AS n "
            "ORDER BY n DESC SKIP 1 LIMIT 1",
            [{"org": "Analytical Engines Ltd", "n": 1}],
        ),
        (
            "MATCH (e:Entity) RETURN e.type AS t, count(e) AS n ORDER BY n DESC, t LIMIT 2",
            [{"t": "organization", "n": 2}, {"t": "person", "n": 2}],
        ),
        (
            "MATCH (p:Person)-[:WORKS_AT]->(o) RETURN o.name AS org, count(p) "
            "ORDER BY count(p) LIMIT 1",
            [{"org": "Analytical Engines Ltd", "count(p)": 1}],
        ),
        # One aggregate row over everything: SKIP 1 or LIMIT 0 leaves none, as in Neo4j.
        ("MATCH (n) RETURN count(n) AS total SKIP 1", []),
        ("MATCH (n:Nothing) RETURN count(n) AS total SKIP 1", []),
        ("MATCH (n:Nothing) RETURN count(n) AS total LIMIT 0", []),
        ("MATCH (n:Nothing) RETURN collect(n.name) AS names LIMIT 1", [{"names": []}]),
        # Two MATCH clauses: the earlier engine limited each part before joining, ordering and
        # filtering them, so the engine must page the finished rows itself.
        (
            "MATCH (p:Person) MATCH (o:Organization) "
            "RETURN p.name AS name, count(o) AS n ORDER BY name LIMIT 2",
            [{"name": "Ada", "n": 2}, {"name": "Alan", "n": 2}],
        ),
        (
            "MATCH (p:Person) MATCH (o:Organization) RETURN p.name, o.name "
            "ORDER BY p.name DESC, o.name SKIP 1 LIMIT 1",
            [{"p.name": "Grace", "o.name": "Analytical Engines Ltd"}],
        ),
        (
            "MATCH (p:Person) MATCH (o:Organization) WHERE o.name STARTS WITH 'Anal' "
            "RETURN o.name LIMIT 1",
            [{"o.name": "Analytical Engines Ltd"}],
        ),
    ],
)
async def test_order_skip_and_limit_apply_to_finished_rows(
    backend: SQLiteBackend, ids: dict[str, str], cypher: str, rows: list[dict[str, object]]
) -> None:
    assert (await backend.query(cypher)).rows == rows


async def test_a_plain_limit_still_pages_the_matches(
    backend: SQLiteBackend, ids: dict[str, str]
) -> None:
    everyone = {row["e.name"] for row in (await backend.query("MATCH (e) RETURN e.name")).rows}
    page = (await backend.query("MATCH (e) RETURN e.name SKIP 2 LIMIT 3")).rows
    assert len(page) == 3 and {row["e.name"] for row in page} < everyone
    assert (await backend.query("MATCH (e) RETURN e.name LIMIT 0")).rows == []
