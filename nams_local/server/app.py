"""``create_app``: the hosted NAMS ``/v1`` wire contract served over any ``MemoryBackend``.

Point any NAMS client (the official Python or TypeScript SDK, curl, the nams-local hosted
client) at ``http://host:port/v1`` and it talks to the local engine exactly as it would to
hosted NAMS: same paths, methods, status codes, camelCase bodies and ``{"error": ...}``
failures. Where the hosted spec is silent, the choices are written down in
``docs/wire-decisions.md``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI

from nams_local.__version__ import __version__
from nams_local.embeddings import Embedder

from .auth import Authenticator
from .deps import ServerState
from .docs import install_docs
from .errors import install_error_handlers
from .hot_routes import HotRoutes
from .keystore import ApiKeyStore
from .middleware import DEFAULT_MAX_BODY_BYTES, RequestGate
from .openapi import install_openapi
from .routes import ROUTERS
from .workspaces import DEFAULT_POOL_SIZE, RootBackend, WorkspacePool

__all__ = ["create_app"]

_DESCRIPTION = """\
A local replica of the **Neo4j Agent Memory Service** (NAMS) memory API, served by
nams-local over its SQLite engine. Routes, bodies, status codes and errors follow the
hosted spec; routes tagged *Extensions* (marked `x-nams-local-extension`) exist only here.
Authenticate with `Authorization: Bearer <API key>`.
"""

_TAGS: list[dict[str, Any]] = [
    {"name": "Conversations", "description": "Short-term memory (hosted routes)."},
    {"name": "Entities", "description": "Long-term memory (hosted routes)."},
    {"name": "Reasoning", "description": "Reasoning memory (hosted routes)."},
    {"name": "Query", "description": "Read-only Cypher (hosted route)."},
    {"name": "Auth", "description": "API-key management (hosted routes)."},
    {
        "name": "Extensions",
        "description": "nams-local only: hosted NAMS lacks these routes. Clients discover "
        "them through GET /v1/capabilities.",
    },
    {"name": "System", "description": "Health (no authentication)."},
]


def _engine_options(
    embeddings: bool | Embedder, cypher: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """``create_app``'s ``embeddings`` and ``cypher`` as the local engine's options."""
    options: dict[str, Any] = (
        {"embeddings": embeddings} if isinstance(embeddings, bool) else {"embedder": embeddings}
    )
    if cypher:
        options["cypher_limits"] = dict(cypher)
    return options


def create_app(
    backend: RootBackend | None = None,
    *,
    db: str | Path | None = None,
    api_keys: Iterable[str] | Mapping[str, str | None] = (),
    embeddings: bool | Embedder = True,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    key_store: ApiKeyStore | None = None,
    pool_size: int = DEFAULT_POOL_SIZE,
    bridge: str | Path | None = None,
    owns_backend: bool = False,
    cypher: Mapping[str, Any] | None = None,
    allow_reset: bool = False,
    ui: bool = True,
) -> FastAPI:
    """Build the app.

    Args:
        backend: an open root backend (anything with ``for_workspace(name)``, such as
            ``SQLiteBackend``); the caller keeps ownership and closes it unless
            ``owns_backend``. ``None`` opens the local SQLite engine at ``db`` (default
            ``nams_local.default_db_path()``) through the wiring (``nams_local.config``),
            which the app closes on shutdown.
        db: the SQLite file. Also where minted API keys are kept; with ``backend`` given
            and no ``db``, minted keys live in memory for the app's lifetime.
        api_keys: the accepted keys (``KEY`` or ``KEY=WORKSPACE``, or a mapping). Empty:
            open mode, any bearer token is accepted and gets its own workspace.
        embeddings: when the app opens the engine: ``False`` for text search only, or an
            ``Embedder`` to use instead of the default model.
        max_body_bytes: larger request bodies are refused with 413.
        key_store: the minted-key table to use instead of opening one.
        pool_size: how many workspace views are kept open.
        bridge: mount the TCK bridge protocol at ``/bridge`` over its own store in this
            file (``":memory:"`` recommended); ``None`` (the default) serves no bridge. It
            must not be ``db``: the bridge's ``clear_all_data`` wipes its store.
        owns_backend: the app closes ``backend`` on shutdown (``nams-local serve`` opens
            it and hands it over).
        cypher: when the app opens the engine, its Cypher limits by name (``timeout``,
            ``memory_mb``, ``max_rows``, ``workers``, ``per_workspace``, ``queue``,
            ``prestart``; see ``docs/wire-decisions.md``, "Limits").
        allow_reset: also serve ``POST /v1/testing/reset`` (empties the caller's
            workspace; for test suites, ``serve --allow-reset``). Off: the route does not
            exist (404).
        ui: serve the memory inspector at ``/ui`` (``docs/inspector.md``; ``serve --no-ui``
            turns it off: 404).

    Backends are opened by the wiring module, never here: the app layer sits above it, so
    ``db=`` and ``bridge=`` (conveniences for tests and scripts) delegate to it.
    """
    from nams_local import config

    if backend is not None and not isinstance(backend, RootBackend):
        raise TypeError("backend must be a MemoryBackend with for_workspace(name)")
    owns_root = backend is None or owns_backend
    if backend is None and db is None:
        db = config.default_db_path()
    # The bridge first: its refusal of ``db`` comes before anything is opened.
    bridge_backend = None if bridge is None else config.open_bridge_backend(bridge, main_db=db)
    root: RootBackend = (
        backend
        if backend is not None
        else config.open_local_backend(db, **_engine_options(embeddings, cypher))
    )
    keys = key_store or ApiKeyStore(db if db is not None else ":memory:")
    state = ServerState(
        pool=WorkspacePool(root, size=pool_size),
        keys=keys,
        authenticator=Authenticator(keys, api_keys),
        owns_root=owns_root,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if bridge_backend is not None:
                await bridge_backend.aclose()
            await state.pool.aclose()
            if state.owns_root:
                await root.aclose()
            state.keys.close()

    app = FastAPI(
        title="nams-local — NAMS Memory API",
        version=__version__,
        description=_DESCRIPTION,
        openapi_tags=_TAGS,
        lifespan=lifespan,
        # /docs is served from packaged assets (docs.py), never a CDN.
        docs_url=None,
        redoc_url=None,
    )
    app.state.nams = state
    install_error_handlers(app)
    for router in ROUTERS:
        app.include_router(router)
    if allow_reset:
        from .routes.testing import router as testing_router

        app.include_router(testing_router)
    install_openapi(app)
    install_docs(app)
    if ui:
        from .ui import install_inspector

        install_inspector(app, state)
    if bridge_backend is not None:
        from nams_local.bridge import create_bridge_app

        app.mount("/bridge", create_bridge_app(bridge_backend))
    # One layer: the access log wraps the 500 guard, which wraps auth, which wraps the
    # body limit (middleware.py).
    app.add_middleware(
        RequestGate,
        authenticator=state.authenticator,
        max_bytes=max_body_bytes,
        hot=HotRoutes(state.pool).answer,
    )
    return app
