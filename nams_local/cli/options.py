"""Options several ``nams-local`` commands share, defined once."""

from __future__ import annotations

import argparse

__all__ = ["add_common", "add_workspace"]


def add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", help="SQLite database file or :memory:")
    parser.add_argument(
        "--no-embeddings", action="store_true", help="text search only, no embedder"
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show the full traceback when the command fails",
    )


def add_workspace(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--workspace",
        default=None,
        metavar="NAME",
        help="the workspace to use (local: default 'default'; `nams-local info` lists them, "
        "including serve's per-token ones; hosted: sent as X-Workspace-Id, default "
        "$MEMORY_WORKSPACE_ID)",
    )
