"""``nams-local purge --user U``: delete every trace of one user (docs/purge.md).

It opens what the configuration opens, like ``info``: ``--db`` or the local engine by
default (the purge then compacts the file so the user's text is gone from its bytes),
hosted NAMS when ``NAMS_BACKEND=hosted`` or ``MEMORY_API_KEY`` say so (what the hosted API
cannot delete is listed). A purge cannot be undone, so on a terminal it asks first; off a
terminal (a script, CI) it refuses unless ``--yes`` says the caller means it — a pipe never
answers "y" by accident. Every failure is one line (``failures.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from ..errors import InvalidInputError
from ..purge_report import PurgeReport, check_user_id
from .options import add_common, add_workspace

__all__ = ["register"]


def register(subparsers: Any) -> None:
    purge = subparsers.add_parser(
        "purge",
        help="delete every trace of one user (messages, entities only they produced, "
        "steps, ...) and compact the file",
    )
    purge.add_argument("--user", required=True, metavar="USER_ID", help="the user to purge")
    add_common(purge)
    add_workspace(purge)
    purge.add_argument("--yes", action="store_true", help="do not ask to confirm")
    purge.add_argument("--json", action="store_true", help="print the report as JSON")
    purge.set_defaults(func=_cmd_purge)


def _open(args: argparse.Namespace) -> tuple[Any, str]:
    """The backend and a description of where it is (for the question)."""
    from ..config import backend_kind, default_db_path, open_hosted_backend, open_local_backend

    kind = backend_kind()  # validates NAMS_BACKEND even when --db picks the local engine
    if args.db is None and kind == "hosted":
        hosted = open_hosted_backend(workspace_id=args.workspace)
        return hosted, f"hosted NAMS at {hosted.endpoint}"
    options: dict[str, Any] = {"embeddings": not args.no_embeddings}
    if args.workspace is not None:
        options["workspace"] = args.workspace
    local = open_local_backend(args.db, **options)
    return local, f"{args.db or default_db_path()} (workspace {local.workspace!r})"


def _confirmed(user_id: str, where: str) -> bool:
    if not sys.stdin.isatty():
        raise InvalidInputError(
            "refusing to purge without confirmation: not on a terminal, pass --yes"
        )
    print(f"Purge every trace of user {user_id!r} from {where}? This cannot be undone.")
    try:
        answer = input("Type 'yes' to purge: ")
    except EOFError:
        answer = ""
    return answer.strip().lower() in ("y", "yes")


def _cmd_purge(args: argparse.Namespace) -> int:
    user_id = check_user_id(args.user)  # before anything is opened
    backend, where = _open(args)

    async def run() -> PurgeReport:
        try:
            return await backend.purge_user(user_id)  # type: ignore[no-any-return]
        finally:
            await backend.aclose()

    if not args.yes and not _confirmed(user_id, where):
        asyncio.run(backend.aclose())
        print("nams-local purge: not confirmed; nothing was deleted", file=sys.stderr)
        return 1
    report = asyncio.run(run())
    if args.json:
        print(json.dumps(report.to_wire(), indent=2))
    else:
        _print(report, where)
    return 0 if report.complete else 3


def _print(report: PurgeReport, where: str) -> None:
    deleted = ", ".join(f"{n} {kind}" for kind, n in report.deleted.items() if n) or "nothing"
    print(f"purged user {report.user_id!r} from {where}: deleted {deleted}")
    if report.kept_shared_entities:
        print(f"  kept {report.kept_shared_entities} shared entities (without this user's data)")
    if report.compacted:
        print(f"  compacted the file in {report.compaction_seconds:.2f} s")
    for left in report.not_deleted:
        print(f"  NOT deleted: {left}")
