"""A run of messages through an extractor, in this process or in a child.

``extract_run`` is the one loop that extracts a conversation's pending messages in order:
each message sees the text of the few before it and the user's name once a message stated
it, and a message whose extraction fails records its error while the rest go on. The
engine's pipeline runs it in process for any extractor; ``serve_runs`` runs it for the
built-in ``RuleExtractor`` in a child process (``backends/sqlite/extraction_process.py``
starts it and says why). The child imports this package and nothing of the server.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from multiprocessing.connection import Connection

from .rules import RuleExtractor
from .types import Extraction, ExtractionInput, Extractor

__all__ = ["RECENT_CONTEXT", "Outcome", "RunItem", "extract_run", "serve_runs"]

log = logging.getLogger("nams_local.extraction")

#: Preceding messages handed to the extractor as context.
RECENT_CONTEXT = 4

#: One message of a run: ``(message id, text, role)``.
RunItem = tuple[str, str, str]
#: What became of it: the extraction, or ``None`` and the error that stopped it.
Outcome = tuple[Extraction | None, str | None]


async def extract_run(
    extractor: Extractor, items: Sequence[RunItem], known: str | None
) -> list[Outcome]:
    """``extractor`` over ``items`` in order; ``known`` is the user's name if an earlier
    message stated it (a message of the run that states it passes it on)."""
    outcomes: list[Outcome] = []
    recent: list[str] = []
    for message_id, text, role in items:
        try:
            found: Extraction | None = await extractor.extract(
                ExtractionInput(
                    text=text, role=role, user_name=known, recent=tuple(recent[-RECENT_CONTEXT:])
                )
            )
            error = None
        except Exception as failure:
            log.warning("extracting message %s failed: %r", message_id, failure)
            found, error = None, f"{type(failure).__name__}: {failure}"
        outcomes.append((found, error))
        recent.append(text)
        if found is not None and found.user_name:
            known = known or found.user_name
    return outcomes


def serve_runs(conn: Connection) -> None:
    """A child process's life (``backends/sqlite/extraction_process.py``): runs of the
    rule extractor in, outcomes out, until the parent sends ``None`` or goes away."""
    extractor = RuleExtractor()
    loop = asyncio.new_event_loop()
    try:
        while True:
            try:
                job = conn.recv()
            except EOFError:
                return
            if job is None:
                return
            items, known = job
            conn.send(loop.run_until_complete(extract_run(extractor, items, known)))
    finally:
        loop.close()
