"""``POST /v1/testing/reset``: empty the caller's workspace between tests.

An extension for test suites that use ``nams-local serve`` as a CI fake (the pytest plugin's
``nams_workspace`` fixture calls it before each test). The route exists only when the app is
built with ``allow_reset=True`` (``serve --allow-reset``): a server started without the flag
answers ``404`` for it, so no production server can be wiped by a stray request. Only the
caller's own workspace (as chosen by its key and ``X-Workspace-Id``) is emptied.
"""

from __future__ import annotations

from nams_local.backend import SupportsWorkspaceReset
from nams_local.errors import NotSupportedError

from ..deps import Backend
from ..responses import StatusResponse
from ..wire import status
from .base import EXTENSION, answers, api_router

__all__ = ["router"]

router = api_router(tags=["Extensions"])


@router.post("/testing/reset", openapi_extra=EXTENSION, **answers(StatusResponse, 501))
async def reset_workspace(backend: Backend) -> dict[str, str]:
    """Delete every conversation, message, entity, relationship, reasoning step and tool
    call of the caller's workspace; other workspaces are untouched."""
    if not isinstance(backend, SupportsWorkspaceReset):
        raise NotSupportedError("this backend cannot reset a workspace")
    await backend.reset_workspace()
    return status("reset")
