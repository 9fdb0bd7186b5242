"""What the inspector needs from its host: turn a token into a workspace's backend.

The inspector sits beside the server in the apps layer and must not import it (the server
mounts the inspector), so the server hands it a ``Gate``: the same authenticator and
workspace pool that ``/v1`` uses, behind one method. Whatever ``/v1`` would refuse for a
token, the gate refuses too, and the workspace is the one ``/v1`` would select.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

from nams_local.backend import MemoryBackend

__all__ = ["Gate", "OpenedWorkspace"]


class OpenedWorkspace(NamedTuple):
    #: What a client sees as ``workspaceId`` (shown on every page).
    workspace_id: str
    backend: MemoryBackend


class Gate(Protocol):
    async def open(self, token: str, workspace_header: str | None) -> OpenedWorkspace:
        """The workspace ``token`` (and an optional ``X-Workspace-Id`` value) selects;
        ``AuthenticationError`` / ``InvalidInputError`` exactly where ``/v1`` refuses."""
        ...
