"""Backend harnesses: how the contract suite opens, views, reopens and closes a store.

To run the suite against another backend, append one ``HarnessFactory`` to
``HARNESS_FACTORIES`` whose ``build`` opens a fresh, empty store and returns a
``BackendHarness`` for it, e.g. the hosted REST client talking to the local server through
``httpx.ASGITransport``::

    HARNESS_FACTORIES.append(HarnessFactory("hosted-asgi", persistent=False, build=...))
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from nams_local.backend import MemoryBackend

from ..wire.traffic import SESSION_GROUP

#: The workspace ``harness.backend`` works in.
DEFAULT_WORKSPACE = "default"
#: The workspace ``harness.other_workspace()`` opens by default.
OTHER_WORKSPACE = "other"

#: Returns the real default embedder, loading it on first call (once per session).
EmbedderLoader = Callable[[], Any]


@dataclass
class BackendHarness:
    """One backend under test plus what the suite needs to drive its store.

    ``backend`` works in workspace ``DEFAULT_WORKSPACE``. ``other_workspace()`` returns a
    backend on the same store in another workspace. ``reopen()`` closes the store and
    returns a fresh backend on the same file (persistent harnesses only); afterwards
    ``harness.backend`` is the new backend, and views from ``other_workspace()`` taken
    before the reopen must not be used any more.
    """

    backend: MemoryBackend
    persistent: bool
    #: (current backend, workspace) -> a backend on the same store in that workspace.
    open_workspace: Callable[[MemoryBackend, str], MemoryBackend]
    #: Opens a new backend on the same store (called after the old one is closed).
    open_again: Callable[[], Awaitable[MemoryBackend]] | None = None
    #: Extra clean-ups (e.g. clients opened for other workspaces), run on close.
    cleanups: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    def other_workspace(self, workspace: str = OTHER_WORKSPACE) -> MemoryBackend:
        return self.open_workspace(self.backend, workspace)

    async def reopen(self) -> MemoryBackend:
        if not self.persistent or self.open_again is None:
            raise RuntimeError("reopen() needs a persistent harness")
        await self.backend.aclose()
        self.backend = await self.open_again()
        return self.backend

    async def close(self) -> None:
        for cleanup in reversed(self.cleanups):
            await cleanup()
        await self.backend.aclose()


@dataclass(frozen=True)
class HarnessContext:
    """What a factory may use to build a harness."""

    tmp_path: Path
    load_embedder: EmbedderLoader


@dataclass(frozen=True)
class HarnessFactory:
    """One backend configuration of the suite; ``id`` becomes the pytest param id."""

    id: str
    persistent: bool
    build: Callable[[HarnessContext], Awaitable[BackendHarness]]
    marks: tuple[pytest.MarkDecorator, ...] = ()


def sqlite_factory(*, on_disk: bool, embeddings: bool) -> HarnessFactory:
    """The local SQLite engine: a file or ``:memory:``, with or without embeddings."""

    async def build(ctx: HarnessContext) -> BackendHarness:
        from backends.sqlite import SQLiteBackend

        path: str | Path = ctx.tmp_path / "mem.db" if on_disk else ":memory:"
        embedder = ctx.load_embedder() if embeddings else None

        def open_store() -> SQLiteBackend:
            # Extraction off: the contract pins what each call does; what extraction adds
            # on top is tested in tests/extraction.
            return SQLiteBackend(
                path,
                embedder=embedder,
                embeddings=embeddings,
                workspace=DEFAULT_WORKSPACE,
                extraction="off",
            )

        async def open_again() -> MemoryBackend:
            return open_store()

        def open_workspace(current: MemoryBackend, workspace: str) -> MemoryBackend:
            assert isinstance(current, SQLiteBackend)
            return current.for_workspace(workspace)

        return BackendHarness(
            backend=open_store(),
            persistent=on_disk,
            open_workspace=open_workspace,
            open_again=open_again if on_disk else None,
        )

    storage = "file" if on_disk else "memory"
    search = "vec" if embeddings else "text"
    return HarnessFactory(
        id=f"sqlite-{storage}-{search}",
        persistent=on_disk,
        build=build,
        marks=(pytest.mark.slow,) if embeddings else (),
    )


HARNESS_FACTORIES: list[HarnessFactory] = [
    sqlite_factory(on_disk=True, embeddings=True),
    sqlite_factory(on_disk=True, embeddings=False),
    sqlite_factory(on_disk=False, embeddings=True),
    sqlite_factory(on_disk=False, embeddings=False),
]


# -- the hosted REST client against the local server -------------------------------------


def hosted_factory(*, loopback: bool) -> HarnessFactory:
    """``backends.hosted.HostedBackend`` talking to ``nams_local.server`` over the wire.

    ``hosted-asgi`` runs the server app in-process (``httpx.ASGITransport``, no socket) on
    a fresh ``:memory:`` engine with the real embedder, so vector and hybrid search go
    through the wire too. ``hosted-loopback`` uses one uvicorn server on a loopback port for
    the whole session (text search only, so it also covers ``vector_search=False``); each
    harness gets a fresh bearer token, and in open mode every token is its own empty
    workspace. ``other_workspace()`` is a client with another token. Every exchange is
    recorded for ``tests/wire/test_hosted_traffic.py`` (checked against the hosted spec).
    """

    async def build(ctx: HarnessContext) -> BackendHarness:
        import uuid

        import httpx

        from backends.hosted import HostedBackend

        from ..wire.traffic import RecordingTransport

        cleanups: list[Callable[[], Awaitable[None]]] = []
        if loopback:
            from ..wire.loopback import loopback_server

            endpoint = f"{loopback_server(embeddings=False).url}/v1"

            def transport() -> httpx.AsyncBaseTransport:
                return RecordingTransport(httpx.AsyncHTTPTransport())
        else:
            from backends.sqlite import SQLiteBackend
            from nams_local.server import create_app

            root = SQLiteBackend(":memory:", embedder=ctx.load_embedder(), extraction="off")
            app = create_app(root)
            lifespan = app.router.lifespan_context(app)
            await lifespan.__aenter__()

            async def close_app() -> None:
                await lifespan.__aexit__(None, None, None)
                await root.aclose()

            cleanups.append(close_app)
            endpoint = "http://nams-local.test/v1"

            def transport() -> httpx.AsyncBaseTransport:
                return RecordingTransport(httpx.ASGITransport(app=app))

        token = f"contract-{uuid.uuid4().hex}"
        backend = HostedBackend(token, endpoint=endpoint, transport=transport())
        await backend.probe_capabilities()

        def open_workspace(current: MemoryBackend, workspace: str) -> MemoryBackend:
            assert isinstance(current, HostedBackend)
            other = HostedBackend(
                f"{token}-{workspace}",
                endpoint=endpoint,
                transport=transport(),
                capabilities=current.server_capabilities,
            )
            cleanups.append(other.aclose)
            return other

        return BackendHarness(
            backend=backend, persistent=False, open_workspace=open_workspace, cleanups=cleanups
        )

    return HarnessFactory(
        id="hosted-loopback" if loopback else "hosted-asgi",
        persistent=False,
        build=build,
        marks=(SESSION_GROUP,) if loopback else (SESSION_GROUP, pytest.mark.slow),
    )


HARNESS_FACTORIES += [hosted_factory(loopback=False), hosted_factory(loopback=True)]
