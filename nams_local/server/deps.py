"""What a route needs, resolved per request: the server state, the caller, their backend.

The auth middleware has already put the ``Principal`` in the request scope; these
dependencies only read it back, typed. The ``Authorization`` header is declared through an
``APIKeyHeader`` so the published OpenAPI document shows the same ``BearerAuth`` scheme as
the hosted spec, but the check itself happens in the middleware, before body parsing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.security import APIKeyHeader

from nams_local.backend import MemoryBackend
from nams_local.errors import AuthenticationError

from .auth import Authenticator, Principal
from .keystore import ApiKeyStore
from .middleware import request_principal
from .workspaces import WorkspacePool

__all__ = [
    "Backend",
    "Caller",
    "Keys",
    "Root",
    "ServerState",
    "documented_auth",
    "server_state",
]

_bearer = APIKeyHeader(
    name="Authorization",
    scheme_name="BearerAuth",
    description="'Bearer <API key>' (the prefix is optional)",
    auto_error=False,
)


@dataclass
class ServerState:
    """Everything the app holds for its lifetime (``app.state.nams``)."""

    pool: WorkspacePool
    keys: ApiKeyStore
    authenticator: Authenticator
    owns_root: bool


# Every dependency here is ``async def`` and takes nothing but the ``Request``: FastAPI runs
# a plain ``def`` dependency on a worker thread (two thread hops per dependency per
# request, which were most of a cached read's cost), and each nested ``Depends`` is one
# more node it solves on every request. The principal is already in the scope.
async def server_state(request: Request) -> ServerState:
    return _server_state(request)


def _server_state(request: Request) -> ServerState:
    state = getattr(request.app.state, "nams", None)
    if not isinstance(state, ServerState):  # pragma: no cover - create_app always sets it
        raise RuntimeError("the app was not built by nams_local.server.create_app")
    return state


def _principal(request: Request) -> Principal:
    principal = request_principal(request.scope)
    if principal is None:  # only reachable if the middleware was removed
        raise AuthenticationError("missing API key")
    return principal


#: What every ``/v1`` router depends on: the ``BearerAuth`` scheme in the published
#: document. The check itself is the middleware's, and every dependency below raises 401
#: should the middleware be missing.
documented_auth = Security(_bearer)


async def _caller(request: Request) -> Principal:
    return _principal(request)


async def _backend(request: Request) -> MemoryBackend:
    return await _server_state(request).pool.get(_principal(request).workspace)


async def _root(request: Request) -> MemoryBackend:
    _principal(request)
    return _server_state(request).pool.root


async def _keys(request: Request) -> ApiKeyStore:
    _principal(request)
    return _server_state(request).keys


#: The authenticated caller.
Caller = Annotated[Principal, Depends(_caller)]
#: The caller's workspace of the memory backend.
Backend = Annotated[MemoryBackend, Depends(_backend)]
#: The root backend (for what is the same in every workspace, like capabilities).
Root = Annotated[MemoryBackend, Depends(_root)]
#: The API-key table.
Keys = Annotated[ApiKeyStore, Depends(_keys)]
