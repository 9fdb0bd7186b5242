"""Fixtures of the contract suite.

Every test takes ``harness`` (or just ``backend``) and runs once per entry of
``harnesses.HARNESS_FACTORIES``; adding a backend configuration means appending one
factory there. Tests that only make sense on a store that survives close and reopen take
``persistent_harness`` instead, which is parametrised over the persistent factories only
(so nothing is ever skipped).
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from nams_local.backend import MemoryBackend

from .harnesses import (
    HARNESS_FACTORIES,
    BackendHarness,
    EmbedderLoader,
    HarnessContext,
    HarnessFactory,
)


def _params(persistent_only: bool) -> list[Any]:
    return [
        pytest.param(factory, id=factory.id, marks=factory.marks)
        for factory in HARNESS_FACTORIES
        if factory.persistent or not persistent_only
    ]


@pytest.fixture(scope="session")
def load_embedder() -> EmbedderLoader:
    """The real default embedder, loaded lazily and at most once per session."""

    @functools.cache
    def load() -> Any:
        from nams_local.embeddings import default_embedder

        return default_embedder()

    return load


async def _open(factory: HarnessFactory, tmp_path: Path, load: EmbedderLoader) -> BackendHarness:
    return await factory.build(HarnessContext(tmp_path=tmp_path, load_embedder=load))


@pytest.fixture(params=_params(persistent_only=False))
async def harness(
    request: pytest.FixtureRequest, tmp_path: Path, load_embedder: EmbedderLoader
) -> AsyncIterator[BackendHarness]:
    h = await _open(request.param, tmp_path, load_embedder)
    try:
        yield h
    finally:
        await h.close()


@pytest.fixture(params=_params(persistent_only=True))
async def persistent_harness(
    request: pytest.FixtureRequest, tmp_path: Path, load_embedder: EmbedderLoader
) -> AsyncIterator[BackendHarness]:
    h = await _open(request.param, tmp_path, load_embedder)
    assert h.persistent
    try:
        yield h
    finally:
        await h.close()


@pytest.fixture
def backend(harness: BackendHarness) -> MemoryBackend:
    """The harness's backend (workspace ``DEFAULT_WORKSPACE``)."""
    return harness.backend
