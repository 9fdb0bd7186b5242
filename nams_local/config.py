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

Backends are imported lazily: importing ``nams_local`` never imports a concrete backend.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import platformdirs

from .errors import AuthenticationError, InvalidInputError

if TYPE_CHECKING:
    from .backend import MemoryBackend

__all__ = [
    "BACKEND_ENV",
    "DEFAULT_DB_NAME",
    "DEFAULT_ENDPOINT",
    "backend_kind",
    "default_db_path",
    "open_backend",
    "open_hosted_backend",
    "open_local_backend",
]

DEFAULT_DB_NAME = "memory.db"
#: Where hosted NAMS answers (the TypeScript SDK's ``DEFAULT_ENDPOINT``).
DEFAULT_ENDPOINT = "https://memory.neo4jlabs.com/v1"
BACKEND_ENV = "NAMS_BACKEND"
API_KEY_ENV = "MEMORY_API_KEY"
ENDPOINT_ENV = "MEMORY_ENDPOINT"
WORKSPACE_ENV = "MEMORY_WORKSPACE_ID"

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

    extraction = _env("NAMS_EXTRACTION")
    if extraction is not None:
        options.setdefault("extraction", extraction.lower())
    return SQLiteBackend(path if path is not None else default_db_path(), **options)


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
