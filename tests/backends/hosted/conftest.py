"""Fixtures of the hosted client tests: a scripted HTTP server on a loopback port (one per
test: its script and what it received are the test's own)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .scripted_server import ScriptedServer, scripted_server


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with scripted_server() as running:
        yield running
