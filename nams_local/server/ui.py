"""Mounting the memory inspector (``nams_local.inspector``) at ``/ui``.

The inspector gets the server's own authenticator and workspace pool through a ``Gate``,
so a token opens in the browser exactly the workspace it opens at ``/v1``, with the same
refusals (unknown, revoked or expired keys), and both share the open workspace views.
"""

from __future__ import annotations

from fastapi import FastAPI

from nams_local.inspector import Gate, OpenedWorkspace, create_inspector

from .deps import ServerState

__all__ = ["UI_PATH", "ServerGate", "install_inspector"]

UI_PATH = "/ui"


class ServerGate(Gate):
    """``/v1``'s authentication and workspace selection, for the inspector."""

    def __init__(self, state: ServerState) -> None:
        self._state = state

    async def open(self, token: str, workspace_header: str | None) -> OpenedWorkspace:
        principal = await self._state.authenticator.authenticate(
            f"Bearer {token}", workspace_header
        )
        backend = await self._state.pool.get(principal.workspace)
        return OpenedWorkspace(principal.workspace_id, backend)


def install_inspector(app: FastAPI, state: ServerState) -> None:
    app.mount(UI_PATH, create_inspector(ServerGate(state)), name="inspector")
