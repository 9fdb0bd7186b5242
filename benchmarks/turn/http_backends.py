"""The HTTP variants of a turn: ``HostedBackend`` against ``nams-local serve`` on loopback
(the very store the in-process figures come from) and against hosted NAMS.

The loopback server and the hosted client are opened on the caller's exit stack, so they
close (clients before the server) whatever the measurement does. Hosted NAMS gets the same
seeded workload built through its API, only when ``MEMORY_API_KEY`` is set and the size is
small enough to build there in reasonable time.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from dataclasses import dataclass

import httpx

from backends.hosted import HostedBackend
from backends.sqlite import SQLiteBackend
from nams_local.backend import MemoryBackend
from nams_local.config import API_KEY_ENV, ENDPOINT_ENV, open_hosted_backend

from .._common import say
from .._http import CountingTransport, LoopbackServer
from .build import SizeSpec, build_workload
from .kinds import TurnKind

__all__ = ["HttpTarget", "http_targets"]

#: The key the loopback server accepts for the store's workspace.
API_KEY = "bench-key"


@dataclass
class HttpTarget:
    """A ``HostedBackend`` to measure, its request counter and its stored conversations."""

    client: MemoryBackend
    transport: CountingTransport
    conversations: list[list[str]]


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
    backend: SQLiteBackend,
    conversations: list[list[str]],
    stack: contextlib.AsyncExitStack,
    skipped: dict[str, str],
    tag: str,
) -> dict[TurnKind, HttpTarget]:
    """Start what ``--backends`` asks for; the stack stops it (clients before the server)."""
    targets: dict[TurnKind, HttpTarget] = {}
    if "loopback" in args.backends:
        from nams_local.server import create_app

        app = create_app(backend, api_keys={API_KEY: backend.workspace})
        server = stack.enter_context(LoopbackServer(app))
        transport = CountingTransport(httpx.AsyncHTTPTransport())
        client = HostedBackend(API_KEY, endpoint=server.endpoint, transport=transport)
        stack.push_async_callback(client.aclose)
        await client.probe_capabilities()
        targets["loopback"] = HttpTarget(client, transport, conversations)
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
