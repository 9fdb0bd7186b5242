"""uvicorn's httptools protocol, writing each plain response to the socket **once**.

uvicorn writes a response's status line and headers when the app sends
``http.response.start`` and its body when the app sends ``http.response.body``: two
``transport.write`` calls, and uvloop tries each at once, so every response cost two
``write`` syscalls made on the event loop's thread while it holds the GIL. A py-spy
profile of ``nams-local serve`` under issue 12's ``--no-embeddings`` mix put the header
write alone at 16 % of the samples that held the GIL (the body write another 3.5 %): a
loopback ``write`` runs the TCP stack and wakes the reader before it returns.

``OneWriteHttpToolsProtocol`` hands each request cycle a transport that holds the header
bytes until the first body write and sends both in one call. Nothing else changes: the
bytes on the wire, their order, keep-alive, ``100 Continue`` (written before the response
starts, so passed straight through), chunked bodies (the first chunk goes with the
headers, later chunks as they come), a response with no body write at all (``HEAD``: the
headers are flushed when the response completes), and a response the app abandons after
its headers (they are flushed before the connection closes, as uvicorn wrote them).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any, cast

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

__all__ = ["HeaderHoldingTransport", "OneWriteHttpToolsProtocol"]


class HeaderHoldingTransport:
    """The connection's transport as one request cycle sees it: the first write after
    the response started (uvicorn's status line and headers) is held and sent together
    with the next write (the body, or its first chunk). Every other call goes to the
    real transport."""

    __slots__ = ("_cycle", "_held", "_started", "transport")

    def __init__(self, transport: asyncio.Transport, cycle: RequestResponseCycle) -> None:
        self.transport = transport
        self._cycle = cycle
        self._held: bytes | None = None
        #: Whether the headers went to ``_held`` already (later writes pass through).
        self._started = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._held is not None:
            held, self._held = self._held, None
            self.transport.write(held + bytes(data))
        elif self._cycle.response_started and not self._started:
            self._started = True
            self._held = bytes(data)
        else:
            self.transport.write(data)

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def flush(self) -> None:
        """Send held headers now (a response ending without a body write)."""
        if self._held is not None:
            held, self._held = self._held, None
            self.transport.write(held)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


class OneWriteHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol whose request cycles write a response once
    (``HeaderHoldingTransport``); what ``nams-local serve`` names as uvicorn's ``http``.

    A response may complete without any body write (uvicorn writes none for ``HEAD``), so
    the cycle's completion flushes what is held: before that, a ``HEAD`` on a keep-alive
    connection got no answer at all. The cycle's own completion callback, not the
    protocol's, because with pipelined requests ``self.cycle`` is already the next one."""

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is not None and not isinstance(cycle.transport, HeaderHoldingTransport):
            holding = HeaderHoldingTransport(cycle.transport, cycle)
            cycle.transport = cast(asyncio.Transport, holding)
            cycle.on_response = functools.partial(_flushed, holding, cycle.on_response)


def _flushed(holding: HeaderHoldingTransport, on_response: Callable[[], None]) -> None:
    holding.flush()
    on_response()
