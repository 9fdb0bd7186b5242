"""``nams-local sync --to ENDPOINT`` / ``--from ENDPOINT``: move a workspace to a NAMS
endpoint (hosted NAMS or another ``nams-local serve``) or pull one into the local store.

Resumable: run the same command again after an interruption and it carries on from its
checkpoint without sending anything twice (docs/sync.md). The report says, per kind, what
was sent, what was already there, and what the target cannot hold.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from typing import Any

from ..backend import MAX_BULK_MESSAGES
from ..settings import API_KEY_ENV, WORKSPACE_ENV
from .options import add_common

__all__ = ["register"]

#: Exit status of a sync that finished but had records refused by the target.
REFUSED_STATUS = 3


def _batch_size(text: str) -> int:
    try:
        size = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 1 <= size <= MAX_BULK_MESSAGES:
        raise argparse.ArgumentTypeError(f"must be from 1 to {MAX_BULK_MESSAGES}")
    return size


def register(subparsers: Any) -> None:
    sync = subparsers.add_parser(
        "sync",
        help="send the local workspace to a NAMS endpoint (--to) or pull one in (--from), "
        "resumably",
    )
    add_common(sync)
    where = sync.add_mutually_exclusive_group(required=True)
    where.add_argument("--to", metavar="ENDPOINT", help="the NAMS REST root to send to (/v1)")
    where.add_argument("--from", dest="from_", metavar="ENDPOINT", help="the one to pull from")
    sync.add_argument(
        "--api-key",
        default=None,
        metavar="KEY",
        help=f"the endpoint's key (default ${API_KEY_ENV})",
    )
    sync.add_argument(
        "--workspace",
        default="default",
        metavar="NAME",
        help="the local workspace (default 'default'; `nams-local info` lists them)",
    )
    sync.add_argument(
        "--remote-workspace",
        default=None,
        metavar="ID",
        help=f"the endpoint's workspace, sent as X-Workspace-Id (default ${WORKSPACE_ENV})",
    )
    sync.add_argument(
        "--checkpoint",
        default=None,
        metavar="FILE",
        help="where progress is kept (default: beside the database, named for the endpoint)",
    )
    sync.add_argument(
        "--batch-size",
        type=_batch_size,
        default=MAX_BULK_MESSAGES,
        metavar="N",
        help=f"messages per request, 1 to {MAX_BULK_MESSAGES} (default {MAX_BULK_MESSAGES})",
    )
    sync.add_argument("--json", action="store_true", help="print the report as JSON")
    sync.set_defaults(func=_cmd_sync)


def _cmd_sync(args: argparse.Namespace) -> int:
    from ..config import backend_kind
    from ..sync import SyncRequest, run_sync

    backend_kind()  # a typo in NAMS_BACKEND is refused here too
    request = SyncRequest(
        direction="to" if args.to else "from",
        endpoint=args.to or args.from_,
        api_key=args.api_key or os.environ.get(API_KEY_ENV) or None,
        db=args.db,
        workspace=args.workspace,
        remote_workspace=args.remote_workspace,
        checkpoint=args.checkpoint,
        batch_size=args.batch_size,
        embeddings=not args.no_embeddings,
    )
    report, checkpoint = asyncio.run(run_sync(request))
    if args.json:
        print(json.dumps({**report.to_json(), "checkpoint": str(checkpoint)}, indent=2))
    else:
        arrow = "to" if request.direction == "to" else "from"
        print(f"nams-local sync {arrow} {request.endpoint}: done (checkpoint {checkpoint})")
        for line in report.lines():
            print(line)
    return REFUSED_STATUS if report.refused else 0
