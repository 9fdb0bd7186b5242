"""Configuration from the environment: which backend, and where it keeps its memory.

``open_backend()`` lets the same application code run offline (tests, laptops) and against
hosted NAMS (production) by environment alone:

- ``NAMS_BACKEND=local|hosted`` picks explicitly; otherwise hosted when ``MEMORY_API_KEY``
  is set, else the local engine.
- Hosted: ``MEMORY_API_KEY``, ``MEMORY_ENDPOINT`` (default
  ``https://memory.neo4jlabs.com/v1``), ``MEMORY_WORKSPACE_ID``.
- Local: ``NAMS_EXTRACTION`` (``sync`` default, ``background``, ``off``) is the engine's
  extraction mode; ``NAMS_LOCAL_DB`` names the SQLite file (``:memory:`` allowed); without it the
  engine uses ``memory.db`` in the user's data directory, so a script run twice remembers.

This is the wiring layer: the only module that names concrete backends (imported lazily,
so importing ``nams_local`` never imports one). Everything that opens a backend when none
is given goes through here: ``create_nams()`` / ``create_nams_provider()`` /
``wrap_openai()`` without ``backend=``, the server's ``create_app(db=...)`` and its TCK
bridge, and the ``nams-local`` commands. The layers below (integrations, core) are always
handed an open backend.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import platformdirs

from .errors import AuthenticationError, InvalidInputError
from .settings import API_KEY_ENV, DEFAULT_ENDPOINT, ENDPOINT_ENV, WORKSPACE_ENV

if TYPE_CHECKING:
    from collections.abc import Callable

    from backends.sqlite import SQLiteBackend

    from .backend import MemoryBackend
    from .integrations import ChatModel, Nams, NamsProvider
    from .scope import ScopeLike

__all__ = [
    "API_KEY_ENV",
    "BACKEND_ENV",
    "BRIDGE_WORKSPACE",
    "DEFAULT_DB_NAME",
    "DEFAULT_ENDPOINT",
    "ENDPOINT_ENV",
    "EXTRACTION_ENV",
    "WORKSPACE_ENV",
    "backend_kind",
    "create_nams",
    "create_nams_provider",
    "default_db_path",
    "extraction_from_env",
    "local_store_embedded",
    "open_backend",
    "open_bridge_backend",
    "open_hosted_backend",
    "open_local_backend",
    "wrap_openai",
]

DEFAULT_DB_NAME = "memory.db"
BACKEND_ENV = "NAMS_BACKEND"
EXTRACTION_ENV = "NAMS_EXTRACTION"
#: The workspace the TCK bridge reads and writes (in its own store).
BRIDGE_WORKSPACE = "tck-bridge"

BackendKind = Literal["local", "hosted"]


def default_db_path() -> str:
    """``$NAMS_LOCAL_DB``, else ``<user data dir>/nams-local/memory.db`` (directory created)."""
    configured = os.environ.get("NAMS_LOCAL_DB")
    if configured:
        return configured
    folder = Path(platformdirs.user_data_dir("nams-local", appauthor=False))
    folder.mkdir(parents=True, exist_ok=True)
    return str(folder / DEFAULT_DB_NAME)


def open_local_backend(path: str | Path | None = None, **options: Any) -> Any:
    """Open the local SQLite engine at ``path`` (default ``default_db_path()``).

    ``$NAMS_EXTRACTION`` (``sync``, ``background`` or ``off``) sets the extraction mode
    unless ``options`` does, so ``nams-local serve`` and every other command can switch it
    by configuration. Imported lazily so that ``nams_local`` itself never pulls in the
    engine's dependencies.
    """
    from backends.sqlite import SQLiteBackend

    extraction = extraction_from_env()
    if extraction is not None:
        options.setdefault("extraction", extraction)
    return SQLiteBackend(path if path is not None else default_db_path(), **options)


def local_store_embedded(path: str | Path | None = None) -> bool | None:
    """Whether the local database at ``path`` (default ``default_db_path()``) was built
    with embeddings (``None``: it does not say), read without opening the engine, so a
    read-only command can open it as built instead of rebuilding its vector index."""
    from backends.sqlite.recorded import has_vector_index

    return has_vector_index(path if path is not None else default_db_path())


def extraction_from_env() -> str | None:
    """``$NAMS_EXTRACTION`` lower-cased, ``None`` when unset; any other value than
    ``sync``, ``background`` or ``off`` is refused naming the variable (a typo must not be
    silently ignored, nor reported as a keyword the user never typed)."""
    value = _env(EXTRACTION_ENV)
    if value is None:
        return None
    if value.lower() not in ("sync", "background", "off"):
        raise InvalidInputError(
            f"{EXTRACTION_ENV} must be 'sync', 'background' or 'off', got {value!r}"
        )
    return value.lower()


def _env(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def backend_kind(backend: str | None = None) -> BackendKind:
    """``backend`` if given, else ``$NAMS_BACKEND``, else hosted iff ``$MEMORY_API_KEY``."""
    chosen = backend if backend is not None else _env(BACKEND_ENV)
    if chosen is None:
        return "hosted" if _env(API_KEY_ENV) else "local"
    kind = chosen.strip().lower()
    if kind not in ("local", "hosted"):
        raise InvalidInputError(f"{BACKEND_ENV} must be 'local' or 'hosted', got {chosen!r}")
    return "hosted" if kind == "hosted" else "local"


def open_hosted_backend(
    api_key: str | None = None,
    *,
    endpoint: str | None = None,
    workspace_id: str | None = None,
    **options: Any,
) -> Any:
    """A ``HostedBackend``; arguments left out come from ``MEMORY_*`` variables."""
    key = api_key if api_key is not None else _env(API_KEY_ENV)
    if not key:
        raise AuthenticationError(
            f"the hosted backend needs an API key: set {API_KEY_ENV} "
            f"(or {BACKEND_ENV}=local to use the local engine)"
        )
    from backends.hosted import HostedBackend

    return HostedBackend(
        key,
        endpoint=endpoint or _env(ENDPOINT_ENV) or DEFAULT_ENDPOINT,
        workspace_id=workspace_id if workspace_id is not None else _env(WORKSPACE_ENV),
        **options,
    )


def open_backend(
    *,
    backend: str | None = None,
    api_key: str | None = None,
    endpoint: str | None = None,
    workspace_id: str | None = None,
    path: str | Path | None = None,
    **options: Any,
) -> MemoryBackend:
    """The backend the environment asks for; keyword arguments override the environment.

    ``backend`` ("local" / "hosted") overrides ``NAMS_BACKEND``; ``api_key``, ``endpoint``
    and ``workspace_id`` override the ``MEMORY_*`` variables (hosted); ``path`` overrides
    ``NAMS_LOCAL_DB`` (local). Other ``options`` go to the backend's constructor (e.g.
    ``timeout=`` for hosted, ``embeddings=False`` for local). An ``api_key`` argument alone
    also selects hosted.
    """
    if backend is None and _env(BACKEND_ENV) is None and api_key:
        backend = "hosted"
    if backend_kind(backend) == "hosted":
        opened: MemoryBackend = open_hosted_backend(
            api_key, endpoint=endpoint, workspace_id=workspace_id, **options
        )
        return opened
    local: MemoryBackend = open_local_backend(path, **options)
    return local


def open_bridge_backend(
    db: str | Path = ":memory:", *, main_db: str | Path | None = None
) -> SQLiteBackend:
    """The TCK bridge's own engine, deterministic and with no background work: embeddings
    off (search is word overlap and needs no model), extraction, extractor and summariser
    off (no entity appears that ``add_entity`` did not create, nothing is written after a
    call returns, so nothing leaks across ``clear_all_data``), workspace ``tck-bridge``.

    ``db`` must not hold real memory: the TCK empties the workspace before every scenario,
    so it is refused (``ValueError``, before anything is opened) when it is ``main_db``.
    """
    same = (
        str(db) != ":memory:"
        and main_db is not None
        and str(main_db) != ":memory:"
        and Path(db).resolve() == Path(main_db).resolve()
    )
    if same:
        raise ValueError("the bridge needs its own database: clear_all_data wipes it")
    from backends.sqlite import SQLiteBackend

    return SQLiteBackend(
        db,
        embeddings=False,
        workspace=BRIDGE_WORKSPACE,
        extraction="off",
        extractor=None,
        summariser=None,
    )


def _given_or_opened(backend: MemoryBackend | None) -> MemoryBackend:
    return backend if backend is not None else open_backend()


def create_nams(backend: MemoryBackend | None = None, **config: Any) -> Nams:
    """``nams_local.integrations.create_nams`` over ``backend``, or with ``backend=None``
    over the backend the environment asks for (``open_backend()``). Options as there."""
    from .integrations import create_nams as over

    return over(_given_or_opened(backend), **config)


def create_nams_provider(
    *,
    base_provider: Callable[[str], ChatModel],
    scope: ScopeLike,
    backend: MemoryBackend | None = None,
    **config: Any,
) -> NamsProvider:
    """``integrations.create_nams_provider``; ``backend=None`` as in ``create_nams``."""
    from .integrations import create_nams_provider as over

    return over(
        base_provider=base_provider, scope=scope, backend=_given_or_opened(backend), **config
    )


def wrap_openai(
    client: Any, *, scope: ScopeLike, backend: MemoryBackend | None = None, **config: Any
) -> Any:
    """``integrations.wrap_openai``; ``backend=None`` as in ``create_nams``."""
    from .integrations import wrap_openai as over

    return over(client, scope=scope, backend=_given_or_opened(backend), **config)
