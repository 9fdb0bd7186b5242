"""The TCK bridge protocol (``POST /bridge/{method}``) over the local engine.

The public agent-memory TCK and its TypeScript, Go, C#, R and Python clients drive an
implementation through this protocol; ``nams-local serve --bridge`` serves it so any of them
can test against nams-local. See ``docs/bridge.md`` and the contract in
``tck-bridge-contract.md``.
"""

from __future__ import annotations

from nams_local.config import BRIDGE_WORKSPACE, open_bridge_backend

from .app import create_bridge_app
from .registry import METHODS
from .short_term import PROTOCOL_VERSION

__all__ = [
    "BRIDGE_WORKSPACE",
    "METHODS",
    "PROTOCOL_VERSION",
    "create_bridge_app",
    "open_bridge_backend",
]
