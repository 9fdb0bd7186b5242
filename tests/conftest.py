"""Fixtures shared by every suite (a suite's own ``conftest.py`` adds or overrides).

``engine`` is the real SQLite engine in memory; ``app`` is overridden by the suites that
serve one, and ``http`` drives whichever ``app`` the suite defines in process. Helpers that
tests import (not fixtures) live in modules named for what they hold: ``tests.asgi``,
``tests.ports``, ``tests.recording_logger``, ``tests.store_snapshot``, ``tests.cypher_support``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from fastapi import FastAPI

from backends.sqlite import SQLiteBackend
from nams_local.server import create_app

from .asgi import in_process
from .ports import closed_port as _closed_port
from .recording_logger import RecordingLogger


@pytest.fixture
async def engine() -> AsyncIterator[SQLiteBackend]:
    """The engine in memory, no embeddings, extraction off: tests that count exact hits of
    what they wrote themselves (``tests/extraction`` overrides it with extraction on)."""
    async with SQLiteBackend(":memory:", embeddings=False, extraction="off") as backend:
        yield backend


@pytest.fixture
def logger() -> RecordingLogger:
    return RecordingLogger()


@pytest.fixture
async def root() -> AsyncIterator[SQLiteBackend]:
    """The store a served app runs over (``/v1``). Extraction off: the server tests pin each
    route's own effect, and ``tests/extraction`` covers the extraction behind the server."""
    async with SQLiteBackend(":memory:", embeddings=False, extraction="off") as backend:
        yield backend


@pytest.fixture
def app(root: SQLiteBackend) -> FastAPI:
    return create_app(root)


@pytest.fixture
async def http(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """A client of ``app`` in process (``httpx.ASGITransport``), its lifespan running."""
    async with in_process(app) as client:
        yield client


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port that refuses connections for the whole test."""
    with _closed_port() as port:
        yield port
