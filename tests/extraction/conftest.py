"""Backends for the extraction suite: the engine with extraction on, in-process and
behind the server (the hosted client over ASGI), since both must show the same graph."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from backends.hosted import HostedBackend
from backends.sqlite import SQLiteBackend
from nams_local.backend import MemoryBackend
from nams_local.server import create_app


@pytest.fixture
async def engine() -> AsyncIterator[SQLiteBackend]:
    async with SQLiteBackend(":memory:", embeddings=False) as backend:
        yield backend


async def _served(root: SQLiteBackend) -> tuple[HostedBackend, Any]:
    app = create_app(root)
    lifespan = app.router.lifespan_context(app)
    await lifespan.__aenter__()
    client = HostedBackend(
        f"extraction-{uuid.uuid4().hex}",
        endpoint="http://nams-local.test/v1",
        transport=httpx.ASGITransport(app=app),
    )
    await client.probe_capabilities()
    return client, lifespan


@pytest.fixture(params=["sqlite", "hosted-asgi"])
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[MemoryBackend]:
    """The engine in-process, or the hosted client talking to ``nams-local serve``'s app."""
    async with SQLiteBackend(":memory:", embeddings=False) as root:
        if request.param == "sqlite":
            yield root
            return
        client, lifespan = await _served(root)
        try:
            yield client
        finally:
            await client.aclose()
            await lifespan.__aexit__(None, None, None)
