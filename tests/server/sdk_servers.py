"""The official SDK (``neo4j-agent-memory``) against a real ``nams-local serve``: a keyed
server on a fresh file, and the SDK settings that point at it as at hosted NAMS."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from neo4j_agent_memory import MemorySettings
from neo4j_agent_memory.config.settings import NamsConfig
from pydantic import SecretStr

from .processes import ServeProcess, serve_process

__all__ = ["keyed_server", "sdk_settings"]


@contextmanager
def keyed_server(folder: Path, key: str, db: str = "sdk.db") -> Iterator[ServeProcess]:
    """``nams-local serve`` with one API key, no embeddings; stopped cleanly after."""
    args = ["--port", "0", "--db", str(folder / db), "--no-embeddings", "--api-key", key]
    with serve_process(args, folder) as process:
        yield process
        assert process.stop(signal.SIGTERM) == 0


def sdk_settings(served: ServeProcess, key: str) -> MemorySettings:
    """The SDK's NAMS backend at ``served``: no retries, a 60 s timeout (a guard against a
    hang, not a figure under test: with 10 s, a request on a machine at load 20 took longer
    and the SDK reported a network error)."""
    nams = NamsConfig(
        endpoint=f"{served.base_url}/v1", api_key=SecretStr(key), max_retries=0, timeout=60.0
    )
    return MemorySettings(backend="nams", nams=nams)
