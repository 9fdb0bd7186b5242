"""The local NAMS server: the hosted ``/v1`` wire contract over any ``MemoryBackend``.

``create_app(...)`` builds the FastAPI app; ``nams-local serve`` runs it under uvicorn.
"""

from __future__ import annotations

from .app import create_app
from .auth import Authenticator, Principal, parse_api_key_option
from .keystore import ApiKeyRecord, ApiKeyStore, KeyRevokedError
from .middleware import DEFAULT_MAX_BODY_BYTES
from .workspaces import RootBackend

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "ApiKeyRecord",
    "ApiKeyStore",
    "Authenticator",
    "KeyRevokedError",
    "Principal",
    "RootBackend",
    "create_app",
    "parse_api_key_option",
]
