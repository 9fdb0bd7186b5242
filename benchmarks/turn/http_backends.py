"""The HTTP variants of a turn: ``HostedBackend`` against ``nams-local serve`` on loopback
(the database file the in-process figures come from) and against hosted NAMS.

The loopback server opens a backend of its own on that file, as a separate ``serve``
process would, and serves it from uvicorn's event loop in a thread: the in-process
backend stays on the benchmark's loop alone. (It once served the in-process backend
object itself from that second loop, and the two loops sharing one backend hung the
loopback series at 100k: ``lanes.FairGate`` was not thread-safe then. It is now, but a
loopback ``serve`` is measured as one: its own lanes, writer, readers and caches.)
Between loopback turns the benchmark settles the server's work as a client of a separate
``serve`` would: extraction through ``/extraction-status``, and the server store's vector
lane through its thread-safe ``drained`` (what ``settle`` waits for in-process).

The loopback server and the hosted client are opened on the caller's exit stack, so they
close (clients before the server, the server before its backend) whatever the
measurement does. Hosted NAMS gets the same
seeded workload built through its API, only when ``MEMORY_API_KEY`` is set and the size is
small enough to build there in reasonable time.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httpx

from backends.hosted import HostedBackend
from backends.sqlite import SQLiteBackend
from nams_local.backend import MemoryBackend
from nams_local.config import API_KEY_ENV, ENDPOINT_ENV, open_hosted_backend

from .._common import say
from .._http import CountingTransport, LoopbackServer, wait_extracted
from .build import SizeSpec, build_workload
from .kinds import TurnKind

__all__ = ["HttpTarget", "Settle", "http_targets", "store_stats"]

#: The key the loopback server accepts for the store's workspace.
API_KEY = "bench-key"
#: How long settling waits for the loopback server's extraction of one turn (seconds).
SETTLE_SECONDS = 60.0

#: Waits for the background work a turn left on its server (its conversation id).
Settle = Callable[[str], Awaitable[None]]


@dataclass
class HttpTarget:
    """A ``HostedBackend`` to measure, its request counter and its stored conversations."""

    client: MemoryBackend
    transport: CountingTransport
    conversations: list[list[str]]
    #: How to wait for a turn's background work there (``None``: nothing to wait for).
    settle: Settle | None = None
    #: The server's own store, when it is a local one (its counters go in the results).
    served: SQLiteBackend | None = None


def _hosted_skip_reason(args: argparse.Namespace, spec: SizeSpec) -> str | None:
    """Why hosted NAMS is not measured at this size, ``None`` when it is."""
    if not os.environ.get(API_KEY_ENV, "").strip():
        return (
            f"{API_KEY_ENV} is not set, so hosted NAMS is not measured (set it, and "
            f"{ENDPOINT_ENV} for another server, to include it)"
        )
    if spec.messages > args.hosted_max_messages:
        return (
            f"{spec.messages} messages is above --hosted-max-messages "
            f"{args.hosted_max_messages}: building that on hosted NAMS takes too long"
        )
    return None


async def http_targets(
    args: argparse.Namespace,
    spec: SizeSpec,
    open_store: Callable[[], SQLiteBackend],
    conversations: list[list[str]],
    stack: contextlib.AsyncExitStack,
    skipped: dict[str, str],
    tag: str,
) -> dict[TurnKind, HttpTarget]:
    """Start what ``--backends`` asks for; the stack stops it (clients before the server)."""
    targets: dict[TurnKind, HttpTarget] = {}
    if "loopback" in args.backends:
        from nams_local.server import create_app

        served = open_store()  # closed after the server has stopped (the stack unwinds)
        stack.push_async_callback(served.aclose)
        app = create_app(served, api_keys={API_KEY: served.workspace})
        server = stack.enter_context(LoopbackServer(app))
        transport = CountingTransport(httpx.AsyncHTTPTransport())
        client = HostedBackend(API_KEY, endpoint=server.endpoint, transport=transport)
        stack.push_async_callback(client.aclose)
        await client.probe_capabilities()
        status = httpx.AsyncClient(
            base_url=server.endpoint.removesuffix("/v1"),
            headers={"Authorization": f"Bearer {API_KEY}"},
        )
        stack.push_async_callback(status.aclose)
        targets["loopback"] = HttpTarget(
            client, transport, conversations, _server_settle(status, served), served
        )
    if "hosted" in args.backends:
        reason = _hosted_skip_reason(args, spec)
        if reason is not None:
            skipped["hosted"] = reason
            say(args, f"{tag} hosted skipped: {reason}")
            return targets
        transport = CountingTransport(httpx.AsyncHTTPTransport())
        hosted: HostedBackend = open_hosted_backend(transport=transport)
        stack.push_async_callback(hosted.aclose)
        await hosted.probe_capabilities()
        workload = spec.workload()
        say(args, f"{tag} building the same workload on hosted NAMS ({hosted.endpoint})")
        hosted_convs, _ = await build_workload(hosted, workload, spec, args.quiet)
        targets["hosted"] = HttpTarget(hosted, transport, hosted_convs)
    return targets


def _server_settle(status: httpx.AsyncClient, served: SQLiteBackend) -> Settle:
    """Settling a loopback turn: its extraction over HTTP, then the server's vector lane
    (a ``concurrent.futures`` wait, safe from this loop; no other call crosses loops)."""

    async def settle(conversation_id: str) -> None:
        left = await wait_extracted(status, [conversation_id], SETTLE_SECONDS)
        if left:
            raise RuntimeError(
                f"the loopback server left {left} extraction units of {conversation_id} "
                f"unfinished after {SETTLE_SECONDS:g} s"
            )
        lane = served.store.vector_lane
        if lane is not None:
            await lane.drained()

    return settle


def store_stats(backend: SQLiteBackend) -> dict[str, int]:
    """What a store's writer and readers did (the loopback server's own, beside the
    in-process one's: each counts only the turns it served)."""
    store = backend.store
    return {
        "writer_units": store.writer.units,
        "commits": store.writer.commits,
        "reads": store.reads,
    }
