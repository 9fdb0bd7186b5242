"""Opening both ends of a sync from what the user typed, and running it.

``--to`` reads the local workspace (no embedder, no extraction: it only reads) and writes
through the hosted REST client; ``--from`` reads through the hosted client and writes into
the local engine, which embeds and extracts what it receives as it always does. The
checkpoint defaults to a file beside the database named for the direction and the remote
end, so two syncs of one database to two endpoints never share one.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..backend import MAX_BULK_MESSAGES, MemoryBackend
from ..errors import AuthenticationError, BackendUnavailableError, InvalidInputError
from .checkpoint import Checkpoint
from .pacing import Pacing
from .replay import Replay
from .report import SyncReport

__all__ = ["SyncRequest", "run_sync"]

Direction = Literal["to", "from"]


@dataclass(frozen=True)
class SyncRequest:
    direction: Direction
    endpoint: str
    api_key: str | None = None
    db: str | None = None
    workspace: str = "default"
    #: Sent as ``X-Workspace-Id``; default ``$MEMORY_WORKSPACE_ID`` (the key's own if unset).
    remote_workspace: str | None = None
    checkpoint: str | None = None
    batch_size: int = MAX_BULK_MESSAGES
    embeddings: bool = True
    pacing: Pacing = field(default_factory=Pacing)

    def local_label(self, db: str) -> str:
        shown = db if db == ":memory:" else str(Path(db).resolve())
        return f"local {shown} workspace {self.workspace}"

    def remote_label(self) -> str:
        return f"{self.endpoint.rstrip('/')} workspace {self.remote_workspace or '(the key)'}"


def _checkpoint_path(request: SyncRequest, db: str) -> Path:
    if request.checkpoint:
        return Path(request.checkpoint)
    tag = hashlib.sha256(f"{request.remote_label()}|{request.workspace}".encode()).hexdigest()[:12]
    name = f"nams-sync-{request.direction}-{tag}.json"
    if db == ":memory:":
        return Path(name)
    return Path(f"{db}.sync-{request.direction}-{tag}.json")


async def run_sync(request: SyncRequest) -> tuple[SyncReport, Path]:
    """Run the sync to its end; returns the report and where the checkpoint is."""
    from ..config import default_db_path, open_hosted_backend, open_local_backend

    db = request.db or default_db_path()
    if request.direction == "to" and db != ":memory:" and not Path(db).exists():
        raise InvalidInputError(f"no database at {db} (--db names the local store to send)")
    remote: MemoryBackend = open_hosted_backend(
        request.api_key, endpoint=request.endpoint, workspace_id=request.remote_workspace
    )
    try:
        await _reach(remote, request.endpoint)
        options: dict[str, Any] = {"workspace": request.workspace}
        if request.direction == "to":
            options.update(embeddings=False, extraction="off")
        else:
            options.update(embeddings=request.embeddings)
        local: MemoryBackend = open_local_backend(db, **options)
        try:
            source, target = (local, remote) if request.direction == "to" else (remote, local)
            ends = (request.local_label(db), request.remote_label())
            identity = {
                "direction": request.direction,
                "source": ends[0] if request.direction == "to" else ends[1],
                "target": ends[1] if request.direction == "to" else ends[0],
            }
            path = _checkpoint_path(request, db)
            checkpoint = Checkpoint.open(path, identity)
            replay = Replay(
                source,
                target,
                checkpoint,
                batch_size=request.batch_size,
                pacing=request.pacing,
            )
            report = await replay.run()
        finally:
            await local.aclose()
    finally:
        await remote.aclose()
    return report, path


async def _reach(remote: MemoryBackend, endpoint: str) -> None:
    """One cheap call first, so a wrong endpoint or key fails in one line, before any write."""
    try:
        await remote.list_conversations(limit=1)
    except AuthenticationError as exc:
        raise AuthenticationError(f"{endpoint} refused the API key: {exc.message}") from exc
    except BackendUnavailableError as exc:
        raise BackendUnavailableError(f"cannot reach {endpoint}: {exc.message}") from exc
