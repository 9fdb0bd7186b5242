"""The sync checkpoint: what has reached the target, so a killed sync resumes without
sending anything twice.

One JSON file, rewritten atomically (a temporary file beside it, flushed to disk, then
``os.replace``) at two moments around every write to the target:

1. before sending, ``pending`` names the write (its kind and source key);
2. once the target acknowledged it, the write's result (source id -> target id, or the
   conversation's count of sent messages) is recorded and ``pending`` cleared.

So after a crash at any instant the file says either "nothing was in flight" or "this one
write may or may not have landed": the replay then asks the target (``reconcile``) before
sending that one again. A crash can never leave a half-written file: readers see the old
checkpoint or the new one.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError

__all__ = ["CHECKPOINT_VERSION", "Checkpoint", "Pending"]

#: Bumped when the file's layout changes; an unknown version is refused, not guessed at.
CHECKPOINT_VERSION = 1

#: The id maps the checkpoint keeps, one per kind of record that gets a new id on the target.
ID_KINDS = ("conversation", "entity", "step", "tool_call", "relationship")


@dataclass
class Pending:
    """The one write that may have reached the target without being recorded."""

    kind: str
    #: The source record's id (for messages: the source conversation's id).
    key: str
    #: Messages only: the index of the batch's first message, and how many it holds.
    start: int = 0
    count: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "key": self.key, "start": self.start, "count": self.count}


@dataclass
class Checkpoint:
    """The state of one sync between one source and one target."""

    path: Path
    #: ``"to"`` or ``"from"`` plus both ends, so a checkpoint is never reused for another pair.
    identity: dict[str, str]
    ids: dict[str, dict[str, str]] = field(default_factory=lambda: {k: {} for k in ID_KINDS})
    #: Source conversation id -> how many of its messages (oldest first) the target holds.
    messages: dict[str, int] = field(default_factory=dict)
    #: Source id -> why the target refused it (kept, so a resume does not try it forever).
    refused: dict[str, str] = field(default_factory=dict)
    pending: Pending | None = None

    @classmethod
    def open(cls, path: Path, identity: dict[str, str]) -> Checkpoint:
        """The checkpoint at ``path``, or a fresh one if there is no file yet."""
        if not path.exists():
            return cls(path=path, identity=dict(identity))
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InvalidInputError(f"the checkpoint {path} cannot be read: {exc}") from None
        if not isinstance(raw, dict) or raw.get("version") != CHECKPOINT_VERSION:
            raise InvalidInputError(
                f"the checkpoint {path} is not a version {CHECKPOINT_VERSION} sync checkpoint"
            )
        if raw.get("identity") != identity:
            raise InvalidInputError(
                f"the checkpoint {path} belongs to another sync "
                f"({_describe(raw.get('identity'))}); pass --checkpoint with another file"
            )
        ids = {kind: dict(raw.get("ids", {}).get(kind, {})) for kind in ID_KINDS}
        pending = raw.get("pending")
        return cls(
            path=path,
            identity=dict(identity),
            ids=ids,
            messages={k: int(v) for k, v in raw.get("messages", {}).items()},
            refused=dict(raw.get("refused", {})),
            pending=Pending(**pending) if isinstance(pending, dict) else None,
        )

    def target_id(self, kind: str, source_id: str) -> str | None:
        return self.ids[kind].get(source_id)

    def mapped_targets(self, kind: str) -> set[str]:
        return set(self.ids[kind].values())

    def begin(self, pending: Pending) -> None:
        """Record that ``pending`` is about to be sent (step 1 above)."""
        self.pending = pending
        self.save()

    def record(self, kind: str, source_id: str, target_id: str) -> None:
        """The target acknowledged ``source_id`` as ``target_id`` (step 2 above)."""
        self.ids[kind][source_id] = target_id
        self.pending = None
        self.save()

    def record_messages(self, conversation_id: str, total: int) -> None:
        self.messages[conversation_id] = total
        self.pending = None
        self.save()

    def refuse(self, source_id: str, reason: str) -> None:
        self.refused[source_id] = reason
        self.pending = None
        self.save()

    def save(self) -> None:
        body = {
            "version": CHECKPOINT_VERSION,
            "identity": self.identity,
            "ids": self.ids,
            "messages": self.messages,
            "refused": self.refused,
            "pending": self.pending.to_json() if self.pending else None,
        }
        folder = self.path.parent
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(body, out, separators=(",", ":"))
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def _describe(identity: object) -> str:
    if not isinstance(identity, dict):
        return "unknown"
    return f"{identity.get('source', '?')} -> {identity.get('target', '?')}"
