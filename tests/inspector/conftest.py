"""Fixtures of the inspector tests: the served app with extraction on, in process."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from backends.sqlite import SQLiteBackend


@pytest.fixture
async def root() -> AsyncIterator[SQLiteBackend]:
    """Extraction runs before each write returns, so the pages have entities at once."""
    async with SQLiteBackend(":memory:", embeddings=False, extraction="sync") as backend:
        yield backend
