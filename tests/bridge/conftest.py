"""Fixtures of the bridge tests: the real server app with ``/bridge`` mounted over its own
in-memory store, driven in process (the root ``conftest.py``'s ``http``) as the TCK drives
it over a socket: one flat JSON body per ``POST /bridge/{method}``."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI

from backends.sqlite import SQLiteBackend
from nams_local.server import create_app

from .support import Bridge


@pytest.fixture
async def root() -> AsyncIterator[SQLiteBackend]:
    """The server's main store (the one ``/v1`` serves), separate from the bridge's; the
    Python-API tests use it directly, with extraction on as a user's store has it."""
    async with SQLiteBackend(":memory:", embeddings=False) as backend:
        yield backend


@pytest.fixture
def app(root: SQLiteBackend) -> FastAPI:
    return create_app(root, bridge=":memory:")


@pytest.fixture
async def bridge(http: httpx.AsyncClient) -> Bridge:
    """A TCK-style caller, after ``setup`` and ``clear_all_data`` (as before a scenario)."""
    caller = Bridge(http)
    await caller.ok("setup")
    await caller.void("clear_all_data")
    return caller
