"""``serve --ready-file PATH``: tell a CI script in any language where the server listens.

With ``--port 0`` the port is known only once the socket is bound. A script in any
language (a Go or TypeScript suite's setup, a shell step) waits for the file to appear and
reads the endpoint from it, instead of parsing a banner. The file appears only when uvicorn
accepts requests (after the app's startup), is written atomically (a reader never sees half
of it), and is removed before binding and on exit, so it never names a dead server::

    {"endpoint": "http://127.0.0.1:43127/v1", "baseUrl": "http://127.0.0.1:43127",
     "port": 43127, "pid": 12345}
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Callable
from pathlib import Path

import uvicorn

from . import heap

__all__ = ["ReadyFile", "ReadyServer"]


class ReadyFile:
    def __init__(self, path: Path) -> None:
        self.path = path

    def remove(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def write(self, endpoint: str, port: int) -> None:
        body = {
            "endpoint": endpoint,
            "baseUrl": endpoint.removesuffix("/v1"),
            "port": port,
            "pid": os.getpid(),
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        partial.write_text(json.dumps(body) + "\n", encoding="utf-8")
        os.replace(partial, self.path)


class ReadyServer(uvicorn.Server):
    """uvicorn's server, calling ``on_ready`` once it has started listening.

    Before that it sets the start-up heap aside from the garbage collector
    (``heap.settle``): the app and its lifespan have built everything that lives as long
    as the process by then."""

    def __init__(self, config: uvicorn.Config, on_ready: Callable[[], None] | None) -> None:
        super().__init__(config)
        self._on_ready = on_ready

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started and not self.should_exit:
            heap.settle()
            if self._on_ready is not None:
                self._on_ready()
