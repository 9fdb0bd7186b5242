"""The memory inspector at ``/ui``: read and fix what the memory holds, in a browser.

"What do you believe about me, why, and since when — and fix it": users and their
conversations, entities with provenance and history, a picture of the graph, reasoning
traces, and confirmed actions (correct, feedback, merge, delete), all over the
``MemoryBackend`` protocol. Design and screenshots: ``docs/inspector.md``.
"""

from __future__ import annotations

from .app import create_inspector
from .gate import Gate, OpenedWorkspace
from .sessions import SessionStore

__all__ = ["Gate", "OpenedWorkspace", "SessionStore", "create_inspector"]
