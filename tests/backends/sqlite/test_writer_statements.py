"""What the writer thread runs per message of extraction: a bounded number of statements.

Every statement on the writer costs CPU under the GIL and a release and re-acquisition of
it (the driver lets go of the GIL for each step), so the apply path is held to a count.
The statements are counted by SQLite itself (``set_trace_callback`` on the writer's real
connection) while the real functions run in a real unit of work on a file store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import insert

from backends.sqlite import SQLiteBackend
from backends.sqlite import schema as s
from backends.sqlite.dbapi import raw_connection
from backends.sqlite.extraction_queue import pending_messages
from backends.sqlite.graph_writes import MessageExtraction, apply_extractions
from backends.sqlite.store import Ctx
from backends.sqlite.summaries import add_observations, due_observations
from nams_local.extraction import ExtractionInput, RuleExtractor
from nams_local.models import NewMessage

R = TypeVar("R")

#: No entities: applying such a message only marks its unit done.
PLAIN = "ok, thanks"
#: Two entities, three relationships (two of them from the speaking user).
FACTS = "I work at Acme Corp and I live in Lima."


@contextmanager
def traced(ctx: Ctx) -> Iterator[list[str]]:
    """The statements the unit's connection runs inside the block, top level only. FTS5's
    statements on its own tables come as ``--`` comments and are left out; a trigger
    program run by a statement is reported as that statement's (parameter-expanded) text
    again, right after it, so a repeat of the line just seen is the same statement."""
    seen: list[str] = []
    raw = raw_connection(ctx.conn)

    def trace(sql: str) -> None:
        if not sql.lstrip().startswith("--") and (not seen or seen[-1] != sql):
            seen.append(sql)

    raw.set_trace_callback(trace)
    try:
        yield seen
    finally:
        raw.set_trace_callback(None)


async def _seed(backend: SQLiteBackend, texts: Sequence[str]) -> tuple[str, list[int]]:
    """A conversation with ``texts`` as messages, each with a ``pending`` extraction unit
    (extraction is off on the backend, so nothing else touches them)."""
    conv = await backend.create_conversation(user_id="u1")
    stored = await backend.add_messages(
        conv.id, [NewMessage(role="user", content=text) for text in texts]
    )

    def queue(ctx: Ctx) -> list[int]:
        pks = [ctx.row(s.messages, m.id, "message").pk for m in stored]
        ctx.conn.execute(
            insert(s.extraction_units),
            [{"message_pk": pk, "status": "pending", "attempts": 0} for pk in pks],
        )
        return pks

    return conv.id, await _unit(backend, queue)


async def _unit(backend: SQLiteBackend, fn: Callable[[Ctx], R]) -> R:
    return await backend.store.run(fn, Ctx(backend.store, backend.workspace))


async def _extracted(texts: Sequence[str], conv_id: str, backend: SQLiteBackend) -> Any:
    def read(ctx: Ctx) -> Any:
        return pending_messages(ctx, conv_id, None)

    user_id, known, pending = await _unit(backend, read)
    rules = RuleExtractor()
    results = [
        MessageExtraction(
            message,
            await rules.extract(
                ExtractionInput(text=message.content, role="user", user_name=known, recent=())
            ),
        )
        for message in pending
    ]
    assert [r.message.content for r in results] == list(texts)
    return user_id, results


def _open(tmp_path: Path) -> SQLiteBackend:
    return SQLiteBackend(tmp_path / "s.sqlite3", embeddings=False, extraction="off")


async def test_reading_the_pending_batch_is_two_statements_whatever_its_size(
    tmp_path: Path,
) -> None:
    backend = _open(tmp_path)
    try:
        conv_id, _ = await _seed(backend, [PLAIN] * 20)

        def read(ctx: Ctx) -> tuple[int, list[str]]:
            with traced(ctx) as seen:
                _, _, pending = pending_messages(ctx, conv_id, None)
            return len(pending), seen

        found, statements = await _unit(backend, read)
        assert found == 20
        # The conversation's pending messages (found by its API id), the user's name.
        assert len(statements) == 2, statements
    finally:
        await backend.aclose()


async def test_applying_a_batch_checks_it_once_and_marks_each_message_once(
    tmp_path: Path,
) -> None:
    """Plain messages: one statement for the whole batch (which units are still pending,
    with each message's day) and one per message (its unit is done) -- the day was once a
    query of its own per message."""
    texts = [PLAIN] * 12
    backend = _open(tmp_path)
    try:
        conv_id, pks = await _seed(backend, texts)
        user_id, results = await _extracted(texts, conv_id, backend)

        def apply(ctx: Ctx) -> list[str]:
            with traced(ctx) as seen:
                apply_extractions(ctx, user_id, results, {}, None)
            return seen

        statements = await _unit(backend, apply)
        assert len(statements) == 1 + len(texts), statements
        status = await _unit(backend, lambda ctx: _statuses(ctx, pks))
        assert status == ["done"] * len(texts)
    finally:
        await backend.aclose()


async def test_applying_facts_costs_a_bounded_number_of_statements_per_fact(
    tmp_path: Path,
) -> None:
    """The same two entities and three relationships in every message: the first message
    creates them, the rest reuse them. Each message then costs at most its mentions, its
    status and, per relationship, the lookups of its ends and of the subject's edges."""
    texts = [FACTS] * 8
    backend = _open(tmp_path)
    try:
        conv_id, _ = await _seed(backend, texts)
        user_id, results = await _extracted(texts, conv_id, backend)
        relationships = len(results[0].extraction.relationships)
        assert relationships == 3

        def apply(ctx: Ctx) -> list[str]:
            with traced(ctx) as seen:
                apply_extractions(ctx, user_id, results, {}, None)
            return seen

        statements = await _unit(backend, apply)
        # Per relationship: its two ends and the subject's edges of its type (the edge is
        # reused); per message: mentions and status; once: the batch check, the user's
        # entity (created and bound) and the first message's new entities and edges.
        per_message = 3 * relationships + 2
        assert len(statements) <= 1 + per_message * len(texts) + 30, len(statements)
        assert not [sql for sql in statements if "FROM messages WHERE pk" in sql]
    finally:
        await backend.aclose()


async def test_observations_due_is_a_few_statements(tmp_path: Path) -> None:
    backend = _open(tmp_path)
    try:
        conv_id, _ = await _seed(backend, [PLAIN] * 25)

        def due(ctx: Ctx) -> tuple[list[int], list[str]]:
            with traced(ctx) as seen:
                runs = due_observations(ctx, conv_id, 10)
            return [len(run) for run in runs], seen

        runs, statements = await _unit(backend, due)
        assert runs == [10, 10]
        # The conversation with what its newest observation covers; the messages after.
        assert len(statements) == 2, statements

        def observe_first(ctx: Ctx) -> list[str]:
            first = due_observations(ctx, conv_id, 10)[0]
            add_observations(ctx, conv_id, [("the first ten", first)])
            return [message.id for message in first]

        covered = await _unit(backend, observe_first)
        runs, statements = await _unit(backend, due)
        assert runs == [10]  # messages 11..20; 21..25 are not a whole run yet
        assert len(statements) == 2, statements
        assert covered[0] in statements[1]  # the covered ids are bound into the second
    finally:
        await backend.aclose()


async def test_a_conversation_that_is_gone_has_nothing_pending_or_due(tmp_path: Path) -> None:
    backend = _open(tmp_path)
    try:
        conv_id, _ = await _seed(backend, [PLAIN] * 12)
        await backend.delete_conversation(conv_id)

        def look(ctx: Ctx) -> tuple[Any, Any]:
            return pending_messages(ctx, conv_id, None), due_observations(ctx, conv_id, 10)

        assert await _unit(backend, look) == ((None, None, []), [])
    finally:
        await backend.aclose()


def _statuses(ctx: Ctx, pks: Sequence[int]) -> list[str]:
    rows = raw_connection(ctx.conn).execute(
        f"SELECT status FROM extraction_units WHERE message_pk IN ({', '.join('?' * len(pks))}) "
        "ORDER BY message_pk",
        tuple(pks),
    )
    return [str(status) for (status,) in rows]
