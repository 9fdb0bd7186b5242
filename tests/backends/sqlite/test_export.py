"""Export and import on the engine: round trip over every record kind, idempotence,
damaged files that write nothing of their bad batch, ``--user`` and remapped ids."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from backends.sqlite import SQLiteBackend
from nams_local import export_format as f
from nams_local.errors import InvalidInputError
from nams_local.transfer import ImportReport, import_stream, write_export
from tests.store_snapshot import snapshot

from .seeded import ALICE_SECRET, BOB_SECRET, kinds_of, open_store, seed

#: Every kind a complete store exports (``end`` is the trailer).
EVERY_KIND = set(f.KIND_ORDER) - {"end"}


def export_lines(backend: SQLiteBackend, **options: object) -> list[bytes]:
    out = io.BytesIO()
    write_export(backend, out, **options)  # type: ignore[arg-type]
    return out.getvalue().splitlines(keepends=True)


def header_of(lines: list[bytes]) -> dict[str, object]:
    header: dict[str, object] = json.loads(lines[0])
    header.pop("created_at")
    return header


async def import_lines(
    backend: SQLiteBackend, lines: list[bytes], batch_size: int = 7
) -> ImportReport:
    return await import_stream(
        backend, io.BytesIO(b"".join(lines)), workspace=backend.workspace, batch_size=batch_size
    )


@pytest.fixture
async def source(tmp_path: Path) -> AsyncIterator[SQLiteBackend]:
    backend = open_store(tmp_path / "source.db")
    await seed(backend)
    yield backend
    await backend.aclose()


@pytest.mark.parametrize("with_vectors", [False, True])
async def test_round_trip_over_every_kind(
    source: SQLiteBackend, tmp_path: Path, with_vectors: bool
) -> None:
    first = export_lines(source, with_vectors=with_vectors)
    assert kinds_of(first) == EVERY_KIND | {"end"}
    target = open_store(tmp_path / "target.db")
    try:
        report = await import_lines(target, first)
        assert report.skipped_count == 0, report.skipped
        assert report.present == 0
        await target.store.vector_lane.drained()  # type: ignore[union-attr]
        second = export_lines(target, with_vectors=with_vectors)
    finally:
        await target.aclose()
    # Same workspace name: ids are kept, so the exports are equal line for line (the
    # header's creation time aside); with vectors, re-embedded or copied ones too.
    assert header_of(second) == header_of(first)
    assert second[1:] == first[1:]


async def test_imported_store_answers_like_the_source(
    source: SQLiteBackend, tmp_path: Path
) -> None:
    target = open_store(tmp_path / "target.db")
    try:
        await import_lines(target, export_lines(source))
        convs = await target.list_conversations()
        assert [c.message_count for c in convs] == [
            c.message_count for c in await source.list_conversations()
        ]
        alice = next(c for c in convs if c.user_id == "alice")
        found = await target.search_messages(alice.id, "cat called", mode="text")
        assert any(ALICE_SECRET in m.content for m in found.items)
        found = await target.search_messages(alice.id, "my pet cat", mode="vector")
        assert found.items  # re-embedded through the vector lane
        paris = await target.get_entity_by_name("Paris")
        assert paris is not None
        # Ids are kept, so the API's answers are the source's, field for field.
        assert await target.get_graph() == await source.get_graph()
        assert await target.list_entities() == await source.list_entities()
        assert await target.get_entity(paris.id) == await source.get_entity(paris.id)
        for conv in convs:
            for read in ("get_trace", "list_observations", "list_reflections", "get_context"):
                assert await getattr(target, read)(conv.id) == await getattr(source, read)(
                    conv.id
                ), read
        graph = await target.get_graph(as_of="2010")
        assert {r.type for r in graph.edges} >= {"LOCATED_IN", "CAPITAL_OF"}
        ended = [r for r in (await target.get_graph()).edges if r.type == "CAPITAL_OF"]
        assert [r.valid_until for r in ended] == ["2020-01"]
        hits = await target.search_entities("capital of France", mode="vector")
        assert "Paris" in {h.name for h in hits.items}  # entity vectors re-embedded
        same = await source.search_entities("capital of France", mode="vector")
        assert [h.id for h in hits.items] == [h.id for h in same.items]
        assert (await target.legacy.list_facts())[0].object == "fish"
        assert (await target.query("MATCH (e:Entity) RETURN count(e) AS n")).rows
    finally:
        await target.aclose()


async def test_importing_twice_changes_nothing(source: SQLiteBackend, tmp_path: Path) -> None:
    lines = export_lines(source)
    target = open_store(tmp_path / "target.db")
    try:
        first = await import_lines(target, lines)
        await target.store.vector_lane.drained()  # type: ignore[union-attr]
        before = snapshot(target)
        again = await import_lines(target, lines)
        await target.store.vector_lane.drained()  # type: ignore[union-attr]
        assert snapshot(target) == before
    finally:
        await target.aclose()
    assert again.added == {}
    assert again.present == first.records
    assert again.skipped_count == 0


async def test_into_the_source_itself_is_a_no_op(source: SQLiteBackend) -> None:
    lines = export_lines(source)
    before = snapshot(source)
    report = await import_lines(source, lines)
    assert snapshot(source) == before
    assert report.added == {}


@pytest.mark.parametrize(
    ("cut", "message"),
    [
        ("drop_end", "truncated"),
        ("mid_line", "cut short"),
        ("bad_count", "end line counts"),
        ("bad_json", "not valid JSON"),
        ("bad_record", "line"),
        ("too_deep", "nested deeper"),
    ],
)
async def test_a_damaged_file_writes_nothing_of_its_bad_batch(
    source: SQLiteBackend, tmp_path: Path, cut: str, message: str
) -> None:
    lines = export_lines(source)
    # The damage is in the last batch (records 15.. with batches of 7 from line 2 on).
    at = len(lines) - 2
    if cut == "drop_end":
        damaged = lines[:-1]
    elif cut == "mid_line":
        damaged = [*lines[:-1], lines[-1][:-3]]
    elif cut == "bad_count":
        damaged = [*lines[:-1], b'{"kind":"end","records":1}\n']
    elif cut == "bad_json":
        damaged = [*lines[:at], b'{"kind": "fact", \n', *lines[at + 1 :]]
    elif cut == "bad_record":
        damaged = [*lines[:at], b'{"kind":"fact","id":"x"}\n', *lines[at + 1 :]]
    else:
        deep = b'{"kind":"fact","id":' + b"[" * 40 + b"]" * 40 + b"}\n"
        damaged = [*lines[:at], deep, *lines[at + 1 :]]
    records = len(lines) - 2
    last_batch = (records // 7) * 7 if records % 7 else records - 7
    target = open_store(tmp_path / "target.db")
    try:
        with pytest.raises(InvalidInputError, match=message):
            await import_lines(target, damaged)
        # Every earlier batch is in; nothing of the damaged one is (the last records,
        # legacy trace tool calls and items, are absent).
        complete = await import_lines(target, lines)
    finally:
        await target.aclose()
    assert complete.present == last_batch
    assert sum(complete.added.values()) == records - last_batch


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (b'{"format":"nams-local-export","version":2,"workspace":"w"}\n', "version 2"),
        (b'{"format":"something-else","version":1}\n', "not a nams-local-export"),
        (b"", "empty"),
        (b'{"format":"nams-local-export","version":1}\n', "header"),
    ],
)
async def test_a_foreign_or_newer_file_is_refused_before_anything_is_written(
    tmp_path: Path, header: bytes, message: str
) -> None:
    target = open_store(tmp_path / "target.db")
    try:
        before = snapshot(target)
        body = (
            header + b'{"kind":"conversation","id":"c1","user_id":null,"metadata":{},'
            b'"created_at":"2024-01-01T00:00:00+00:00","updated_at":"2024-01-01T00:00:00+00:00"}\n'
        )
        if not header:  # an empty file
            body = b""
        with pytest.raises(InvalidInputError, match=message):
            await import_stream(target, io.BytesIO(body), workspace="default")
        assert snapshot(target) == before
    finally:
        await target.aclose()


async def test_user_export_holds_that_users_memory_only(source: SQLiteBackend) -> None:
    lines = export_lines(source, user_id="alice")
    text = b"".join(lines).decode()
    assert ALICE_SECRET in text
    assert BOB_SECRET not in text
    assert "Globex" not in text  # an entity only Bob's messages mention
    assert json.loads(lines[0])["user"] == "alice"
    assert {"conversation", "message", "entity", "mention", "observation"} <= kinds_of(lines)
    assert not kinds_of(lines) & {"preference", "fact", "trace", "item"}


async def test_into_another_workspace_of_the_same_store_remaps_ids(
    source: SQLiteBackend,
) -> None:
    lines = export_lines(source)
    other = source.for_workspace("copy")
    try:
        report = await import_lines(other, lines)
        # import_lines passes the target's workspace: "copy" is not "default".
        assert report.remapped is True
        copied = export_lines(other)
        again = await import_lines(other, lines)
    finally:
        await other.aclose()
    assert report.skipped_count == 0
    assert again.added == {}
    originals = {json.loads(x).get("id") for x in lines[1:]} - {None}
    copies = {json.loads(x).get("id") for x in copied[1:]} - {None}
    assert len(copies) == len(originals)
    assert not copies & originals  # every id remapped, none shared with the source
    strip = [_without_ids(x) for x in lines[1:]]
    assert [_without_ids(x) for x in copied[1:]] == strip  # equal modulo ids


def _without_ids(line: bytes) -> dict[str, object]:
    record: dict[str, object] = json.loads(line)
    for name in (*f.ID_FIELDS, *f.ID_LIST_FIELDS):
        record.pop(name, None)
    return record


async def test_a_record_whose_parent_is_missing_is_skipped_with_the_reason(
    tmp_path: Path,
) -> None:
    header = {
        "format": "nams-local-export",
        "version": 1,
        "workspace": "default",
        "created_at": "2026-01-01T00:00:00+00:00",
        "nams_local": "0",
    }
    orphan = {
        "kind": "message",
        "id": "m-1",
        "conversation_id": "nowhere",
        "role": "user",
        "content": "hello",
        "metadata": {},
        "created_at": "2026-01-01T00:00:00+00:00",
    }
    body = (
        "\n".join(json.dumps(x) for x in (header, orphan, {"kind": "end", "records": 1})).encode()
        + b"\n"
    )
    target = open_store(tmp_path / "target.db")
    try:
        report = await import_stream(target, io.BytesIO(body), workspace="default")
    finally:
        await target.aclose()
    assert report.added == {}
    assert [(s.line, s.kind) for s in report.skipped] == [(2, "message")]
    assert "nowhere" in report.skipped[0].reason


async def test_a_vector_of_the_wrong_size_is_refused_naming_its_line(
    source: SQLiteBackend, tmp_path: Path
) -> None:
    lines = export_lines(source, with_vectors=True)
    at = next(n for n, line in enumerate(lines) if b'"kind":"entity"' in line)
    entity = json.loads(lines[at])
    entity["vector"] = "AAAAAA=="  # one float, not 64
    damaged = [*lines[:at], json.dumps(entity).encode() + b"\n", *lines[at + 1 :]]
    target = open_store(tmp_path / "target.db")
    try:
        before = snapshot(target)
        with pytest.raises(InvalidInputError, match=f"line {at + 1}: a vector has 1 values"):
            await import_lines(target, damaged, batch_size=500)
        assert snapshot(target) == before  # one batch: nothing written
    finally:
        await target.aclose()
