"""What one ``nams-local serve`` process needs to open its store and build its app.

A value object, so that the single-process path and each worker of ``serve --workers N``
(``workers.py``) build the very same app from the very same settings: the supervisor hands
it to every worker as JSON over the worker's stdin (never on its command line, where the
API keys would show in ``ps``), and the worker rebuilds it with :meth:`ServeOptions.from_dict`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ServeOptions"]


@dataclass(frozen=True)
class ServeOptions:
    """The settings of the app and the store one serving process opens."""

    db: str
    api_keys: tuple[str, ...] = ()
    embeddings: bool = True
    max_body_bytes: int | None = None
    bridge: str | None = None
    extraction: str = "background"
    cypher_timeout: float | None = None
    cypher_memory_mb: int | None = None
    allow_reset: bool = False
    ui: bool = True
    #: A message write waits until its vector is stored before it is acknowledged. ``serve``
    #: turns it on whenever embeddings are: with several workers a search routed to another
    #: process cannot wait for this process's in-memory vector queue (docs/sharing-a-file.md,
    #: "Workers"), and with one a search under load waited for every write queued before
    #: it (wire decision L20).
    vectors_before_ack: bool = False

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> ServeOptions:
        """The options :meth:`to_dict` gave, after a JSON round trip (lists for tuples)."""
        fields = dict(raw)
        fields["api_keys"] = tuple(fields.get("api_keys", ()))
        return cls(**fields)
