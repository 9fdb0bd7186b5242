"""Export a backend to a file, and import a file into any ``MemoryBackend``.

Export needs a backend that can stream its records (``SupportsExport``: the local engine).
Import works into any backend. One that takes records as they are (``SupportsImport``)
gets each batch in one transaction with ids, times and derived state kept. Any other one
(hosted NAMS) gets the records replayed through ``MemoryBackend`` methods, its own ids
recorded in an id map (source id → target id). Records the protocol cannot write
(observations, reflections and mentions the target derives itself, legacy records) are
reported as skipped, never dropped silently.

Every line is validated before its batch is written (``export_format``), and a damaged
line, a file cut short (no ``end`` line, or a count that disagrees) or a foreign header
stops the import with one message: the batch holding it writes nothing, the batches before
it stay (the file can be imported again, whole: what is there is left as it is).
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from pydantic import BaseModel

from . import export_format as f
from .backend import MAX_BULK_MESSAGES, MemoryBackend, SupportsItems
from .errors import InvalidInputError, NamsError
from .items import ItemPut
from .models import NewMessage

__all__ = [
    "DEFAULT_BATCH",
    "MAX_REPORTED_SKIPS",
    "ImportReport",
    "import_stream",
    "write_export",
]

#: Records per batch (one transaction on the local engine).
DEFAULT_BATCH = 500
#: A report lists at most this many skipped records (it counts them all).
MAX_REPORTED_SKIPS = 100

Progress = Callable[[int], None]


def write_export(
    source: f.SupportsExport,
    out: IO[bytes],
    *,
    user_id: str | None = None,
    with_vectors: bool = False,
    progress: Progress | None = None,
) -> int:
    """Write the header, every record and the ``end`` line to ``out``; the number of
    records (the ``end`` line not counted). Memory stays constant: records are written as
    they are read."""
    out.write(f.dump_line(source.export_header(user_id=user_id, with_vectors=with_vectors)))
    count = 0
    for record in source.export_records(user_id=user_id, with_vectors=with_vectors):
        out.write(f.dump_line(record))
        if not isinstance(record, f.EndRecord):
            count += 1
            if progress is not None and count % 1000 == 0:
                progress(count)
    if progress is not None:
        progress(count)
    return count


@dataclass
class ImportReport:
    """What an import did, for the person who ran it."""

    header: f.ExportHeader
    #: Records written, by kind.
    added: dict[str, int] = field(default_factory=dict)
    #: Records already in the target (every record, the second time a file is imported).
    present: int = 0
    skipped_count: int = 0
    #: The first ``MAX_REPORTED_SKIPS`` skipped records with the reason.
    skipped: list[f.Skipped] = field(default_factory=list)
    records: int = 0
    batches: int = 0
    #: Ids were remapped (the file came from another workspace; see ``remap_ids``).
    remapped: bool = False
    #: ``"fidelity"`` (records kept as they are) or ``"replay"`` (protocol methods).
    path: str = "fidelity"

    def take(self, result: f.BatchResult) -> None:
        for kind, n in result.added.items():
            self.added[kind] = self.added.get(kind, 0) + n
        self.present += result.present
        self.skipped_count += len(result.skipped)
        room = MAX_REPORTED_SKIPS - len(self.skipped)
        self.skipped.extend(result.skipped[: max(room, 0)])
        self.batches += 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "source_workspace": self.header.workspace,
            "path": self.path,
            "remapped_ids": self.remapped,
            "records": self.records,
            "batches": self.batches,
            "added": dict(sorted(self.added.items())),
            "present": self.present,
            "skipped": self.skipped_count,
            "skipped_records": [
                {"line": s.line, "kind": s.kind, "reason": s.reason} for s in self.skipped
            ],
        }


async def import_stream(
    target: MemoryBackend,
    stream: f.LineSource,
    *,
    workspace: str | None = None,
    id_map: MutableMapping[str, str] | None = None,
    batch_size: int = DEFAULT_BATCH,
    progress: Progress | None = None,
) -> ImportReport:
    """Import an export file into ``target``, batch by batch.

    ``workspace`` is the target's workspace name: when it is not the one the file came
    from, ids are remapped (``remap_ids``) so they cannot collide with the source's in
    the same store. ``id_map`` (replay path only) records target ids by source id; keep
    it between runs to make a replay idempotent and resumable.
    Raises ``InvalidInputError`` naming the line for a damaged or cut file.
    """
    if not 1 <= batch_size <= 10_000:
        raise InvalidInputError("batch_size must be from 1 to 10000")
    lines = f.read_lines(stream)
    first = next(lines, None)
    header = f.parse_header(first[1] if first else b"")
    remap = workspace is not None and workspace != header.workspace
    report = ImportReport(header=header, remapped=remap)
    fidelity = isinstance(target, f.SupportsImport)
    report.path = "fidelity" if fidelity else "replay"
    replay = None if fidelity else _Replay(target, id_map if id_map is not None else {})
    batch: list[f.NumberedRecord] = []
    ended = False

    async def flush() -> None:
        if not batch:
            return
        if isinstance(target, f.SupportsImport):
            result = await target.import_batch(header, batch)
        else:
            assert replay is not None
            result = await replay.batch(batch)
        report.take(result)
        batch.clear()
        if progress is not None:
            progress(report.records)

    for number, line in lines:
        if ended:
            raise InvalidInputError(f"line {number} follows the end line")
        record = f.parse_record(line, number)
        f.check_vectors(record, header, number)
        if isinstance(record, f.EndRecord):
            if record.records != report.records:
                raise InvalidInputError(
                    f"the end line counts {record.records} records, the file holds "
                    f"{report.records} (the file is damaged)"
                )
            ended = True
            continue
        report.records += 1
        batch.append((number, f.remap_ids(record, workspace) if remap and workspace else record))
        if len(batch) >= batch_size:
            await flush()
    if not ended:
        done = sum(report.added.values()) + report.present
        raise InvalidInputError(
            "the file is truncated (it has no end line); the last batch was not imported"
            + (f" ({done} records of earlier batches were)" if done else "")
        )
    await flush()
    return report


class _Replay:
    """Records replayed through ``MemoryBackend`` methods (a target without
    ``SupportsImport``): the target assigns ids, ``ids`` maps the file's to them."""

    def __init__(self, target: MemoryBackend, ids: MutableMapping[str, str]) -> None:
        self.target = target
        self.ids = ids

    async def batch(self, records: Sequence[f.NumberedRecord]) -> f.BatchResult:
        result = f.BatchResult()
        pending: list[tuple[int, f.MessageRecord]] = []
        for line, record in records:
            if isinstance(record, f.MessageRecord):
                if pending and pending[-1][1].conversation_id != record.conversation_id:
                    await self._messages(pending, result)
                if len(pending) >= MAX_BULK_MESSAGES:
                    await self._messages(pending, result)
                pending.append((line, record))
                continue
            await self._messages(pending, result)
            try:
                await self._one(line, record, result)
            except NamsError as exc:
                result.skip(line, record.kind, exc.message)
        await self._messages(pending, result)
        return result

    def _known(self, record_id: str, result: f.BatchResult) -> bool:
        if record_id in self.ids:
            result.present += 1
            return True
        return False

    def _target(
        self, line: int, kind: str, source_id: str | None, result: f.BatchResult
    ) -> str | None:
        if source_id is None:
            return None
        found = self.ids.get(source_id)
        if found is None:
            result.skip(line, kind, f"{source_id} was not imported")
        return found

    async def _messages(
        self, pending: list[tuple[int, f.MessageRecord]], result: f.BatchResult
    ) -> None:
        todo = [(line, r) for line, r in pending if not self._known(r.id, result)]
        pending.clear()
        if not todo:
            return
        line, first = todo[0]
        conversation = self._target(line, "message", first.conversation_id, result)
        if conversation is None:
            for other_line, _ in todo[1:]:
                result.skip(other_line, "message", f"{first.conversation_id} was not imported")
            return
        try:
            stored = await self.target.add_messages(
                conversation,
                [NewMessage(role=r.role, content=r.content, metadata=r.metadata) for _, r in todo],
            )
        except NamsError as exc:
            for other_line, _ in todo:
                result.skip(other_line, "message", exc.message)
            return
        for (_, r), message in zip(todo, stored, strict=True):
            self.ids[r.id] = message.id
        result.add("message", len(stored))

    async def _one(self, line: int, r: BaseModel, result: f.BatchResult) -> None:
        t = self.target
        record_id = getattr(r, "id", None)
        if isinstance(record_id, str) and self._known(record_id, result):
            return
        kind = str(getattr(r, "kind", "record"))
        if isinstance(r, f.ConversationRecord):
            made: str | None = (await t.create_conversation(r.user_id, r.metadata)).id
        elif isinstance(r, f.EntityRecord):
            props = {k: str(v) for k, v in r.properties.items()}
            made = (await t.add_entity(r.name, r.type, r.description, props or None)).id
        elif isinstance(r, f.RelationshipRecord):
            made = await self._relationship(line, r, result)
        elif isinstance(r, f.FeedbackRecord | f.MergeRecord):
            await self._entity_change(line, r, result)
            return
        elif isinstance(r, f.ReasoningStepRecord):
            conv = self._target(line, kind, r.conversation_id, result)
            if conv is None:
                return
            made = (await t.record_step(conv, r.reasoning, r.action_taken, r.result)).id
        elif isinstance(r, f.ToolCallRecord):
            step = self._target(line, kind, r.step_id, result)
            if r.step_id is not None and step is None:
                return
            made = (
                await t.record_tool_call(
                    r.tool_name, r.input, r.output, r.status, step, r.duration_ms
                )
            ).id
        elif isinstance(r, f.ItemRecord) and isinstance(t, SupportsItems):
            key = "item\x1f" + "\x1f".join([*r.namespace, r.key])
            if self._known(key, result):
                return
            ttl = r.ttl_minutes
            await t.item_batch([ItemPut(tuple(r.namespace), r.key, r.value, r.text, ttl)])
            self.ids[key] = r.key
            result.add(kind)
            return
        else:
            result.skip(line, kind, _CANNOT.get(kind, "the target has no way to write it"))
            return
        if made is None:
            return
        if isinstance(record_id, str):
            self.ids[record_id] = made
        result.add(kind)

    async def _relationship(
        self, line: int, r: f.RelationshipRecord, result: f.BatchResult
    ) -> str | None:
        if not self.target.capabilities.relationship_writes:
            result.skip(line, r.kind, "the target cannot write relationships")
            return None
        src = self._target(line, r.kind, r.source_id, result)
        dst = None if src is None else self._target(line, r.kind, r.target_id, result)
        if src is None or dst is None:
            return None
        made = await self.target.add_relationship(
            src,
            dst,
            r.type,
            r.properties,
            r.confidence,
            valid_from=r.valid_from,
            valid_until=r.valid_until,
            supersede=False,
        )
        return made.id

    async def _entity_change(
        self, line: int, r: f.FeedbackRecord | f.MergeRecord, result: f.BatchResult
    ) -> None:
        if isinstance(r, f.FeedbackRecord):
            entity = self._target(line, r.kind, r.entity_id, result)
            given = f"{r.user_score}\x1f{r.confirmed}"
            key = f"feedback\x1f{r.entity_id}"
            if entity is None:
                return
            if self.ids.get(key) == given:
                result.present += 1
                return
            await self.target.entity_feedback(entity, r.user_score, r.confirmed)
            self.ids[key] = given
            result.add(r.kind)
            return
        src = self._target(line, r.kind, r.source_id, result)
        dst = None if src is None else self._target(line, r.kind, r.target_id, result)
        if src is not None and dst is not None:
            key = f"merge\x1f{r.source_id}"
            if self._known(key, result):
                return
            await self.target.merge_entities(src, dst)
            self.ids[key] = dst
            result.add(r.kind)


_DERIVED = "the target derives these itself from the messages (no write method)"
_LEGACY = "legacy (TCK bridge) records need the local engine"
_CANNOT = {
    "observation": _DERIVED,
    "reflection": _DERIVED,
    "mention": _DERIVED,
    "user_entity": _DERIVED,
    "session": _LEGACY,
    "preference": _LEGACY,
    "fact": _LEGACY,
    "trace": _LEGACY,
    "trace_step": _LEGACY,
    "trace_tool_call": _LEGACY,
    "item": "the target holds no key/value items",
}
