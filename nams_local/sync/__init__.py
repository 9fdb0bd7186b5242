"""``nams-local sync``: move a workspace between the local engine and a NAMS endpoint.

``replay`` does the work between any two ``MemoryBackend``s, ``checkpoint`` makes it
resumable, ``reconcile`` closes the crash window without duplicates, ``pacing`` waits out
rate limits, ``session`` opens both ends from the command's arguments. See docs/sync.md.
"""

from __future__ import annotations

from .checkpoint import Checkpoint, Pending
from .pacing import Pacing
from .replay import Replay
from .report import SyncReport
from .session import SyncRequest, run_sync

__all__ = ["Checkpoint", "Pacing", "Pending", "Replay", "SyncReport", "SyncRequest", "run_sync"]
