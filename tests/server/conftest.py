"""Fixtures of the server tests: the real SQLite engine behind the real app.

``root``, ``app`` and ``http`` (the app in process, its lifespan running) come from the
root ``conftest.py``; modules that need a socket use ``support.live_server`` instead.
"""

from __future__ import annotations

import httpx
import pytest

from .support import Api


@pytest.fixture
def alice(http: httpx.AsyncClient) -> Api:
    """A caller with the token ``alice-token`` (open mode: its own workspace)."""
    return Api(http, "alice-token")


@pytest.fixture
def bob(http: httpx.AsyncClient) -> Api:
    return Api(http, "bob-token")
