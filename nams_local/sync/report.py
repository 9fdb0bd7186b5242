"""What a sync did, per kind of record: sent, already there, refused, and what the target
cannot hold (with the reason), so nothing is dropped without a count saying so."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SyncReport"]


@dataclass
class SyncReport:
    #: Records written to the target in this run.
    sent: Counter[str] = field(default_factory=Counter)
    #: Records the checkpoint (or a lookup on the target) showed were there already.
    skipped: Counter[str] = field(default_factory=Counter)
    #: Records (messages: each one of the batch) found on the target after an unconfirmed
    #: write (the crash window), not sent again.
    adopted: Counter[str] = field(default_factory=Counter)
    #: Records the target refused (source id -> reason; also kept in the checkpoint).
    refused: dict[str, str] = field(default_factory=dict)
    #: What the target cannot hold: kind -> count, and kind -> why.
    not_carried: Counter[str] = field(default_factory=Counter)
    reasons: dict[str, str] = field(default_factory=dict)
    #: Times the target asked us to wait (429 / 503 with ``Retry-After``).
    waits: int = 0

    def cannot_hold(self, kind: str, count: int, reason: str) -> None:
        if count > 0:
            self.not_carried[kind] += count
            self.reasons[kind] = reason

    def to_json(self) -> dict[str, Any]:
        return {
            "sent": dict(self.sent),
            "skipped": dict(self.skipped),
            "adopted": dict(self.adopted),
            "refused": dict(self.refused),
            "notCarried": {
                kind: {"count": n, "reason": self.reasons[kind]}
                for kind, n in self.not_carried.items()
            },
            "waits": self.waits,
        }

    def lines(self) -> list[str]:
        """The report for a person: one line per kind, then what was not carried."""
        kinds = sorted(set(self.sent) | set(self.skipped) | set(self.adopted))
        out = [
            f"  {kind}: {self.sent[kind]} sent, {self.skipped[kind]} already there"
            + (f", {self.adopted[kind]} found after an interruption" if self.adopted[kind] else "")
            for kind in kinds
        ]
        if not kinds:
            out.append("  nothing to send")
        if self.waits:
            out.append(f"  the target asked to wait {self.waits} time(s) (rate limit)")
        for source_id, reason in self.refused.items():
            out.append(f"  refused by the target: {source_id}: {reason}")
        if self.not_carried:
            out.append("  not carried (the target cannot hold it):")
            for kind, n in sorted(self.not_carried.items()):
                out.append(f"    {kind}: {n} ({self.reasons[kind]})")
        return out
