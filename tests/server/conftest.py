"""Fixtures of the server tests: the real SQLite engine behind the real app.

``client`` talks to the app in process (``httpx.ASGITransport``), with the app's lifespan
running around it; modules that need a socket use ``support.live_server`` instead.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI

from backends.sqlite import SQLiteBackend
from nams_local.server import create_app

from .support import Api

BASE_URL = "http://nams.test"


@pytest.fixture
async def root() -> AsyncIterator[SQLiteBackend]:
    # Extraction off: these tests pin each route's own effect (tests/extraction covers it).
    backend = SQLiteBackend(":memory:", embeddings=False, extraction="off")
    try:
        yield backend
    finally:
        await backend.aclose()


@pytest.fixture
def app(root: SQLiteBackend) -> FastAPI:
    return create_app(root)


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL) as http,
    ):
        yield http


@pytest.fixture
def alice(client: httpx.AsyncClient) -> Api:
    """A caller with the token ``alice-token`` (open mode: its own workspace)."""
    return Api(client, "alice-token")


@pytest.fixture
def bob(client: httpx.AsyncClient) -> Api:
    return Api(client, "bob-token")
