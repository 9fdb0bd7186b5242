"""Backends for the extraction suite: the engine with extraction on, in-process and
behind the server (the hosted client over ASGI), since both must show the same graph."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from backends.sqlite import SQLiteBackend
from nams_local.backend import MemoryBackend
from nams_local.server import create_app
from tests.asgi import hosted_in_process


@pytest.fixture
async def engine() -> AsyncIterator[SQLiteBackend]:
    async with SQLiteBackend(":memory:", embeddings=False) as backend:
        yield backend


@pytest.fixture(params=["sqlite", "hosted-asgi"])
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[MemoryBackend]:
    """The engine in-process, or the hosted client talking to ``nams-local serve``'s app."""
    async with SQLiteBackend(":memory:", embeddings=False) as root:
        if request.param == "sqlite":
            yield root
            return
        async with hosted_in_process(create_app(root), f"extraction-{uuid.uuid4().hex}") as client:
            await client.probe_capabilities()
            yield client
