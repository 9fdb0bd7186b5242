"""Waiting for the writer's idle-time merging of full-text segments (``fts_merges.py``)."""

from __future__ import annotations

import asyncio
import time

from backends.sqlite import SQLiteBackend
from backends.sqlite.fts_merges import FtsMerges


async def merges_settled(backend: SQLiteBackend, deadline: float = 30.0) -> FtsMerges:
    """Once the idle writer has nothing left to merge; its ``FtsMerges``."""
    merges = backend.store._writer.merges
    assert merges is not None
    start = time.monotonic()
    while merges.pending:
        assert time.monotonic() - start < deadline, "the idle writer never merged"
        await asyncio.sleep(0.02)
    return merges
