"""Stop a request's work when its client goes away.

Starlette does not cancel a route when the client disconnects: the work runs to the end
and its answer is dropped. For work that can run for seconds (Cypher), that wasted a CPU
after every impatient client. ``until_disconnected`` runs the work as a task beside a
watcher of the ASGI ``receive`` channel (which, once the body has been read, yields
``http.disconnect`` only when the client is gone) and cancels the work when the watcher
fires first; the backend turns that cancellation into killing the worker that ran it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any, TypeVar

from starlette.requests import Request

from nams_local.errors import NamsError

__all__ = ["ClientGoneError", "until_disconnected"]

T = TypeVar("T")


class ClientGoneError(NamsError):
    """The client disconnected before the answer was ready (logged as nginx's 499)."""

    status_code = 499


async def _disconnected(request: Request) -> None:
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


async def until_disconnected(request: Request, work: Coroutine[Any, Any, T]) -> T:
    """``await work``, unless the client disconnects first: then cancel it and raise
    ``ClientGoneError``."""
    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not task.done():
            task.cancel()
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
    if task.cancelled() or not task.done():
        with contextlib.suppress(asyncio.CancelledError):
            await task
        raise ClientGoneError("the client disconnected; the query was stopped")
    return task.result()
