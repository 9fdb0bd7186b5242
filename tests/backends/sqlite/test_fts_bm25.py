"""BM25 beside FTS5 (``fts_bm25``): the same scores as ``bm25()``, without counting every
query term's rows at every query, and FTS5's own ranking where that would cost more."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from backends.sqlite import SQLiteBackend, dbapi, fts_bm25
from backends.sqlite.fts_bm25 import TermStats, Tokens, ranked_rows, varints
from backends.sqlite.inline_reads import reader_thread
from backends.sqlite.search import bm25
from backends.sqlite.store import Ctx
from backends.sqlite.text import match_query, scope_token, terms
from nams_local import NewMessage

T = TypeVar("T")

# Words with several forms of one stem, diacritics, digits and an underscore (two tokens).
VOCABULARY = [
    "moving",
    "moved",
    "moves",
    "move",
    "house",
    "Berlin",
    "Zürich",
    "zurich",
    "café",
    "cafe",
    "naïve",
    "naive",
    "dog",
    "dogs",
    "walking",
    "walked",
    "2024",
    "budget",
    "budgets",
    "report",
    "reporting",
    "foo_bar",
    "meeting",
    "meetings",
    "lentil",
    "soup",
    "trams",
    "late",
    "coffee",
    "machine",
    "roadmap",
    "quarterly",
    "billing",
    "service",
    "flaky",
    "test",
    "beagle",
]

QUERIES = (
    "moving to Zürich",
    "the dog walked",
    "budget report 2024",
    "foo_bar meeting",
    "cafe naive soup",
    "quarterly roadmap meetings",
    "beagle",
    "walking the dogs to the cafe",
)


#: Most words of a message: so that each word above is in a few rows, not most (where
#: FTS5's IDF is its floor, 1e-6, and every score is alike).
FILLER = [f"filler{i}" for i in range(300)]


@pytest.fixture(autouse=True)
def _score_every_match(monkeypatch: pytest.MonkeyPatch) -> None:
    """These stores are small: FTS5's own counting would be the cheaper path for every
    query (``MIN_POSTINGS``), so the scoring here is what these tests switch on."""
    monkeypatch.setattr(fts_bm25, "MIN_POSTINGS", 0)


def _text(rng: random.Random, words: int) -> str:
    picked = (rng.choice(VOCABULARY if rng.random() < 0.15 else FILLER) for _ in range(words))
    return " ".join(picked) + "."


async def _fill(backend: SQLiteBackend, rng: random.Random, convs: int, each: int) -> list[str]:
    ids = []
    for c in range(convs):
        conv = await backend.create_conversation(f"user{c % 3}")
        # A few long messages: their sizes take two varint bytes (128 tokens or more).
        lengths = [rng.choice((3, 8, 15, 30)) if i % 9 else 150 for i in range(each)]
        await backend.add_messages(
            conv.id, [NewMessage(role="user", content=_text(rng, n)) for n in lengths]
        )
        ids.append(conv.id)
    return ids


async def _on_reader(backend: SQLiteBackend, fn: Callable[[Any], T]) -> T:
    """``fn(raw DB-API connection)`` in a reader job of ``backend`` (on a reader thread:
    an inline try cut off by its budget would have run part of ``fn`` already)."""
    return await backend.store.read(
        reader_thread(lambda ctx: fn(dbapi.raw_connection(ctx.conn))),
        Ctx(backend.store, backend.workspace),
    )


def _traced(raw: Any, fn: Callable[[], T]) -> tuple[list[str], T]:
    """``fn()``'s result and the statements it ran on ``raw``."""
    seen: list[str] = []
    raw.set_trace_callback(seen.append)
    try:
        return seen, fn()
    finally:
        raw.set_trace_callback(None)


async def _matched(
    backend: SQLiteBackend, seed: int, query: str, convs: int, each: int
) -> tuple[list[str], str]:
    """A filled store's conversations, and ``query``'s match in the first of them."""
    ids = await _fill(backend, random.Random(seed), convs=convs, each=each)
    match = match_query(query, scope_token("c", ids[0]))
    assert match is not None
    return ids, match


def _fts5(raw: Any, match: str, limit: int) -> list[tuple[int, float]]:
    return [
        (int(pk), float(score))
        for pk, score in raw.execute(
            "SELECT rowid, -bm25(messages_fts, 1.0, 0.0) AS s FROM messages_fts "
            "WHERE messages_fts MATCH ? ORDER BY s DESC, rowid LIMIT ?",
            (match, limit),
        )
    ]


def _same(ours: list[tuple[Any, ...]] | None, theirs: list[tuple[int, float]]) -> None:
    assert ours is not None
    assert [pk for pk, *_ in ours] == [pk for pk, _ in theirs]
    for (_, a, *_), (_, b) in zip(ours, theirs, strict=True):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12)


def test_a_word_has_the_tokens_of_the_index() -> None:
    """SQLite's own porter tokenizer: stems, folded diacritics, an underscore splitting."""
    tokens = Tokens()
    assert tokens.of(["Moving", "moved", "Zürich", "naïve", "foo_bar", "2024", "..."]) == [
        ("move",),
        ("move",),
        ("zurich",),
        ("naiv",),
        ("foo", "bar"),
        ("2024",),
        (),
    ]


def test_a_full_token_cache_starts_again_without_losing_an_answer() -> None:
    tokens = Tokens()
    tokens.MAX_CACHED = 2
    words = ["moving", "dogs", "walked", "Zürich", "moving"]
    assert tokens.of(words) == [("move",), ("dog",), ("walk",), ("zurich",), ("move",)]
    assert tokens.of(words[::-1]) == [("move",), ("zurich",), ("walk",), ("dog",), ("move",)]


def test_varints_read_sqlite_varints() -> None:
    assert varints(bytes([0x05, 0x81, 0x00, 0x7F])) == [5, 128, 127]
    assert varints(bytes([0x82, 0x80, 0x01])) == [2 * 128 * 128 + 1]


async def test_the_scores_are_fts5_bm25s(tmp_path: Path) -> None:
    """Every conversation and every query: the same rows, order and scores as
    ``bm25(messages_fts, 1.0, 0.0)``, for one conversation and for several at once."""
    rng = random.Random(7)
    async with SQLiteBackend(tmp_path / "s.db", embedder=None) as backend:
        convs = await _fill(backend, rng, convs=6, each=25)

        def compare(raw: Any) -> int:
            stats, checked = TermStats(), 0
            for query in QUERIES:
                words = terms(query)
                matches = [match_query(query, scope_token("c", c)) for c in convs]
                tokens = " OR ".join(f'"{scope_token("c", c)}"' for c in convs[:3])
                matches.append(f"scope : ({tokens}) AND {match_query(query)}")
                for match in matches:
                    assert match is not None
                    ours = ranked_rows(raw, stats, "messages_fts", match, words, 50)
                    _same(ours, _fts5(raw, match, 50))
                    checked += len(ours or [])
            return checked

        assert await _on_reader(backend, compare) > 100  # rows compared, not empty answers


async def test_document_counts_come_from_a_snapshot_and_the_rows_added_since(
    tmp_path: Path,
) -> None:
    """The vocabulary is read once, not per query. Rows added since are counted from the
    snapshot's last rowid on: the scores stay FTS5's. Deleted rows are not subtracted
    (scores near FTS5's) until ``STALE_SHARE`` of the table changed: then it is read
    again, and the scores are FTS5's once more."""
    rng = random.Random(11)
    stats = TermStats()
    query = "moving budget report"
    words = terms(query)
    async with SQLiteBackend(tmp_path / "s.db", embedder=None) as backend:
        convs = await _fill(backend, rng, convs=4, each=50)
        match = match_query(query, scope_token("c", convs[0]))
        assert match is not None

        def search(raw: Any) -> tuple[list[str], list[tuple[Any, ...]] | None, Any]:
            seen, ours = _traced(
                raw, lambda: ranked_rows(raw, stats, "messages_fts", match, words, 50)
            )
            return seen, ours, _fts5(raw, match, 50)

        def vocabulary_reads(seen: list[str]) -> int:
            return sum("messages_fts_vocabulary" in s for s in seen)

        seen, ours, theirs = await _on_reader(backend, search)
        assert vocabulary_reads(seen) == 1
        _same(ours, theirs)
        seen, ours, theirs = await _on_reader(backend, search)
        assert vocabulary_reads(seen) == 0
        _same(ours, theirs)

        # 2 % more rows, all holding "moving": counted past the snapshot, exact.
        added = await backend.add_messages(
            convs[1], [NewMessage(role="user", content="moving again") for _ in range(4)]
        )
        seen, ours, theirs = await _on_reader(backend, search)
        assert vocabulary_reads(seen) == 0
        _same(ours, theirs)

        # Rows added since the snapshot and deleted again are simply not counted any more.
        for message in added[:2]:
            await backend.delete_message(convs[1], message.id)
        seen, ours, theirs = await _on_reader(backend, search)
        _same(ours, theirs)

        # Rows the snapshot counted, deleted: not subtracted, so near FTS5's scores, not equal.
        older = await backend.search_messages(convs[2], "moving", 3, "text")
        assert len(older.items) == 3
        for message in older.items:
            await backend.delete_message(convs[2], message.id)
        seen, ours, theirs = await _on_reader(backend, search)
        assert vocabulary_reads(seen) == 0
        assert ours is not None
        stale, fresh = {r[0]: r[1] for r in ours}, dict(theirs)
        assert stale.keys() == fresh.keys()  # the same rows (near ties may swap)
        assert stale == pytest.approx(fresh, rel=0.15)  # "moving": 3 of its ~20 rows
        assert stale != pytest.approx(fresh, rel=1e-9)

        # Past STALE_SHARE of the table: read again, FTS5's scores again.
        await backend.add_messages(
            convs[1], [NewMessage(role="user", content="moving again") for _ in range(12)]
        )
        seen, ours, theirs = await _on_reader(backend, search)
        assert vocabulary_reads(seen) == 1
        _same(ours, theirs)


async def test_a_term_missing_from_the_snapshot_is_counted_in_full(tmp_path: Path) -> None:
    """A rare term (under ``SNAPSHOT_MIN_ROWS`` rows) is left out of the snapshot and
    counted in full at the query: its count is right."""
    rng = random.Random(3)
    stats = TermStats()
    async with SQLiteBackend(tmp_path / "s.db", embedder=None) as backend:
        convs = await _fill(backend, rng, convs=3, each=30)
        await backend.add_messages(
            convs[0], [NewMessage(role="user", content="a zeppelin over the budget report")]
        )
        match = match_query("zeppelin budget", scope_token("c", convs[0]))
        assert match is not None
        words = ["zeppelin", "budget"]

        def search(raw: Any) -> tuple[list[tuple[Any, ...]] | None, Any]:
            return ranked_rows(raw, stats, "messages_fts", match, words, 9), _fts5(raw, match, 9)

        ours, theirs = await _on_reader(backend, search)
        _same(ours, theirs)
        counts = stats._snapshots["messages_fts"].counts
        assert "zeppelin" not in counts and "budget" in counts
        await backend.add_messages(
            convs[1], [NewMessage(role="user", content="zeppelin zeppelin") for _ in range(3)]
        )
        ours, theirs = await _on_reader(backend, search)
        _same(ours, theirs)


async def test_a_match_of_many_rows_is_ranked_by_fts5(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``MAX_SCORED_ROWS`` rows ``ranked_rows`` declines, and ``bm25`` answers with
    FTS5's ranking: the same hits either way."""
    monkeypatch.setattr(fts_bm25, "MAX_SCORED_ROWS", 10)
    rng = random.Random(5)
    async with SQLiteBackend(tmp_path / "s.db", embedder=None) as backend:
        convs = await _fill(backend, rng, convs=1, each=40)
        match = match_query("dog budget moving", scope_token("c", convs[0]))
        words = terms("dog budget moving")
        assert match is not None

        def both(ctx: Ctx) -> tuple[Any, Any, Any]:
            raw = dbapi.raw_connection(ctx.conn)
            declined = ranked_rows(raw, TermStats(), "messages_fts", match, words, 5)
            with_stats = bm25(ctx.conn, "messages_fts", match, 5, 3, stats=TermStats(), words=words)
            return declined, with_stats, bm25(ctx.conn, "messages_fts", match, 5, 3)

        declined, with_stats, plain = await backend.store.read(
            both, Ctx(backend.store, backend.workspace)
        )
    assert declined is None
    assert len(plain) == 5
    assert with_stats == plain


async def test_terms_in_few_rows_are_ranked_by_fts5(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Below ``MIN_POSTINGS`` (the terms' rows, summed) FTS5's counting costs less than
    scoring here: ``ranked_rows`` declines without running the match, above it scores."""
    stats = TermStats()
    async with SQLiteBackend(tmp_path / "s.db", embedder=None) as backend:
        _, match = await _matched(backend, 17, "budget report", convs=2, each=30)

        def search(raw: Any) -> tuple[list[str], list[tuple[Any, ...]] | None]:
            words = ["budget", "report"]
            return _traced(raw, lambda: ranked_rows(raw, stats, "messages_fts", match, words, 9))

        await _on_reader(backend, search)  # the snapshot is read
        counts = stats._snapshots["messages_fts"].counts
        postings = counts["budget"] + counts["report"]
        monkeypatch.setattr(fts_bm25, "MIN_POSTINGS", postings + 1)
        seen, declined = await _on_reader(backend, search)
        assert declined is None
        assert not any("MATCH" in s for s in seen)  # declined before any query
        monkeypatch.setattr(fts_bm25, "MIN_POSTINGS", postings)
        seen, scored = await _on_reader(backend, search)
        assert scored


async def test_a_snapshot_read_when_the_table_was_small_is_read_again_after_growth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every query declined (its terms too rare to be worth it) still checks the table's
    size every ``CHECK_EVERY`` uses: a snapshot read at a small size does not stay."""
    monkeypatch.setattr(fts_bm25, "MIN_POSTINGS", 10**9)
    stats = TermStats()
    async with SQLiteBackend(tmp_path / "s.db", embedder=None) as backend:
        convs, match = await _matched(backend, 19, "budget", convs=1, each=20)

        def search(raw: Any) -> list[tuple[Any, ...]] | None:
            return ranked_rows(raw, stats, "messages_fts", match, ["budget"], 5)

        assert await _on_reader(backend, search) is None
        small = stats._snapshots["messages_fts"].rows
        await backend.add_messages(
            convs[0], [NewMessage(role="user", content=f"budget line {i}") for i in range(20)]
        )
        for _ in range(fts_bm25.CHECK_EVERY - 1):
            assert await _on_reader(backend, search) is None
        assert stats._snapshots["messages_fts"].rows == small  # not checked yet
        assert await _on_reader(backend, search) is None
        assert stats._snapshots["messages_fts"].rows >= small + 20


async def test_a_file_store_reads_the_vocabulary_off_the_search_path(tmp_path: Path) -> None:
    """The search that finds no snapshot does not read it: FTS5 ranks that one, the
    vocabulary is read on another reader thread, and the next search is scored here."""
    async with SQLiteBackend(tmp_path / "s.db", embedder=None) as backend:
        _, match = await _matched(backend, 23, "budget report", convs=2, each=20)
        stats = backend.store.term_stats

        def search(raw: Any) -> tuple[list[str], list[tuple[Any, ...]] | None, Any]:
            words = ["budget", "report"]
            seen, ours = _traced(
                raw, lambda: ranked_rows(raw, stats, "messages_fts", match, words, 9)
            )
            return seen, ours, _fts5(raw, match, 9)

        seen, first, _ = await _on_reader(backend, search)
        assert first is None
        assert not any("messages_fts_vocabulary" in s for s in seen)
        assert stats.pending is not None
        await asyncio.wrap_future(stats.pending)
        seen, second, theirs = await _on_reader(backend, search)
        assert not any("messages_fts_vocabulary" in s for s in seen)
        _same(second, theirs)


async def test_a_reader_that_finds_the_first_snapshot_being_read_ranks_with_fts5(
    tmp_path: Path,
) -> None:
    """No snapshot yet and another reader reading it: this one does not wait for it."""
    stats = TermStats()
    async with SQLiteBackend(tmp_path / "s.db", embedder=None) as backend:
        _, match = await _matched(backend, 9, "budget", convs=2, each=20)

        def search(raw: Any) -> list[tuple[Any, ...]] | None:
            return ranked_rows(raw, stats, "messages_fts", match, ["budget"], 5)

        stats._reading.add("messages_fts")  # another reader's read in progress
        declined = await _on_reader(backend, search)
        stats._reading.clear()
        found = await _on_reader(backend, search)
    assert declined is None
    assert found


async def test_a_conversation_search_ranks_as_with_fts5_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the backend: the same messages and scores with and without ``fts_bm25``."""
    rng = random.Random(13)
    async with SQLiteBackend(tmp_path / "s.db", embedder=None) as backend:
        convs = await _fill(backend, rng, convs=3, each=30)
        found = {}
        default = fts_bm25.MAX_SCORED_ROWS
        for rows in (default, -1):  # -1: every match declined, FTS5 ranks
            monkeypatch.setattr(fts_bm25, "MAX_SCORED_ROWS", rows)
            found[rows] = [
                [(m.id, m.score) for m in (await backend.search_messages(c, q, 8)).items]
                for c in convs
                for q in QUERIES
            ]
    ours, theirs = found[default], found[-1]
    assert sum(map(len, ours)) > 50
    assert [[i for i, _ in hits] for hits in ours] == [[i for i, _ in hits] for hits in theirs]
    for a, b in zip(ours, theirs, strict=True):
        assert [s for _, s in a] == pytest.approx([s for _, s in b], rel=1e-9)
