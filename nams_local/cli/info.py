"""``nams-local info``: what the configuration opens, and what it holds.

It follows the same configuration as ``open_backend()`` (issue 15, item 7): ``--db`` or
the local engine by default, hosted NAMS when ``NAMS_BACKEND=hosted`` or
``MEMORY_API_KEY`` say so. For hosted it reports the endpoint and workspace and makes one
cheap call, so "is my key and endpoint right?" has an answer. For the local engine it
lists every workspace in the file with its counts (``serve`` gives each token its own
workspace, which ``--workspace`` then opens here and in ``mcp``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from ..__version__ import __version__
from ..errors import BackendUnavailableError
from .options import add_common, add_workspace

__all__ = ["register"]


def register(subparsers: Any) -> None:
    info = subparsers.add_parser(
        "info", help="show the backend (local or hosted), driver, vector support and counts"
    )
    add_common(info)
    add_workspace(info)
    info.add_argument("--json", action="store_true", help="print JSON")
    info.set_defaults(func=_cmd_info)


def _cmd_info(args: argparse.Namespace) -> int:
    from ..config import backend_kind

    kind = backend_kind()  # validates NAMS_BACKEND even when --db picks the local engine
    details = _hosted(args) if args.db is None and kind == "hosted" else _local(args)
    if args.json:
        print(json.dumps(details, indent=2))
        return 0
    _print(details)
    return 0


def _local(args: argparse.Namespace) -> dict[str, Any]:
    from ..config import open_local_backend

    options: dict[str, Any] = {"embeddings": not args.no_embeddings}
    if args.workspace is not None:
        options["workspace"] = args.workspace
    backend = open_local_backend(args.db, **options)
    try:
        details: dict[str, Any] = backend.info()
    finally:
        asyncio.run(backend.aclose())
    return details


def _hosted(args: argparse.Namespace) -> dict[str, Any]:
    from ..config import open_hosted_backend

    backend = open_hosted_backend(workspace_id=args.workspace)

    async def probe() -> int:
        try:
            return len(await backend.list_conversations(limit=1))
        finally:
            await backend.aclose()

    try:
        seen = asyncio.run(probe())
    except Exception as exc:
        detail = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        raise BackendUnavailableError(
            f"cannot reach hosted NAMS at {backend.endpoint}: {detail}"
        ) from exc
    return {
        "backend": "hosted",
        "endpoint": backend.endpoint,
        "workspace": backend.workspace_id or "(the key's own)",
        "reachable": f"yes (listed {seen} conversation{'s' if seen != 1 else ''})",
    }


def _print(details: dict[str, Any]) -> None:
    counts: dict[str, Any] = details.pop("counts", {})
    workspaces: dict[str, dict[str, int]] = details.pop("workspaces", {})
    width = max(len(k) for k in [*details, *counts, "workspaces"]) + 2
    print(f"nams-local {__version__}")
    for key, value in details.items():
        print(f"  {key:<{width}}{value}")
    if counts:
        print("  counts:")
        for key, value in counts.items():
            print(f"    {key:<{width - 2}}{value}")
    if workspaces:
        print("  workspaces:")
        for name, row in workspaces.items():
            parts = ", ".join(f"{n} {what}" for what, n in row.items())
            print(f"    {name}: {parts}")
