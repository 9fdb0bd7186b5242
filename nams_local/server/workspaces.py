"""One backend view per workspace, opened on first use from a single root backend.

The server holds one store (one SQLite file, one worker thread) and serves every API key
from it: ``root.for_workspace(name)`` returns a view scoped to one workspace. Views are
kept in a small LRU so a busy workspace does not rebuild its view per request, and a flood
of distinct tokens in open mode cannot grow memory without bound.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Protocol, runtime_checkable

from nams_local.backend import MemoryBackend

__all__ = ["DEFAULT_POOL_SIZE", "RootBackend", "WorkspacePool"]

DEFAULT_POOL_SIZE = 1024


@runtime_checkable
class RootBackend(MemoryBackend, Protocol):
    """A backend that can open its sibling workspaces on the same store."""

    def for_workspace(self, workspace: str) -> MemoryBackend: ...


class WorkspacePool:
    """Workspace views of ``root``, least recently used evicted (and closed) first."""

    def __init__(self, root: RootBackend, *, size: int = DEFAULT_POOL_SIZE) -> None:
        if size < 1:
            raise ValueError("size must be at least 1")
        self.root = root
        self._size = size
        self._views: OrderedDict[str, MemoryBackend] = OrderedDict()

    async def get(self, workspace: str) -> MemoryBackend:
        # No await until the map is consistent again, so no lock is needed (one event loop).
        view = self._views.get(workspace)
        if view is not None:
            self._views.move_to_end(workspace)
            return view
        view = self.root.for_workspace(workspace)
        self._views[workspace] = view
        evicted = []
        while len(self._views) > self._size:
            evicted.append(self._views.popitem(last=False)[1])
        for old in evicted:
            await old.aclose()
        return view

    async def aclose(self) -> None:
        """Close every view (the root stays open: its owner closes it)."""
        views = list(self._views.values())
        self._views.clear()
        for view in views:
            await view.aclose()
