"""The ``nams-local`` command: inspect a database, run an offline demo, serve the REST API.

``info`` answers "what am I running on?" (driver, vector support, counts), ``demo``
proves, end to end and with no key or network, that the engine stores, searches and links
memories, and ``serve`` makes the engine look like hosted NAMS to any client over HTTP.
Heavy imports happen inside the commands so ``--help`` is instant.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import __version__

__all__ = ["main"]


def _open(db: str | None, embeddings: bool) -> Any:
    from .config import open_local_backend

    return open_local_backend(db, embeddings=embeddings)


def _cmd_info(args: argparse.Namespace) -> int:
    backend = _open(args.db, not args.no_embeddings)
    try:
        info = backend.info()
    finally:
        asyncio.run(backend.aclose())
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    counts = info.pop("counts")
    width = max(len(k) for k in [*info, *counts]) + 2
    print(f"nams-local {__version__}")
    for key, value in info.items():
        print(f"  {key:<{width}}{value}")
    print("  counts:")
    for key, value in counts.items():
        print(f"    {key:<{width - 2}}{value}")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="nams-demo-") as tmp:
        db = args.db or str(Path(tmp) / "demo.db")
        backend = _open(db, not args.no_embeddings)

        async def run() -> None:
            from .demo import run_demo

            try:
                await run_demo(backend, sys.stdout)
            finally:
                await backend.aclose()

        asyncio.run(run())
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    from .server.serve import run

    return run(
        host=args.host,
        port=args.port,
        db=args.db,
        api_keys=args.api_key or [],
        embeddings=not args.no_embeddings,
        max_body_bytes=args.max_body_bytes,
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nams-local", description="Graph-shaped memory for AI agents, offline."
    )
    parser.add_argument("--version", action="version", version=f"nams-local {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--db", help="SQLite database file or :memory:")
        p.add_argument("--no-embeddings", action="store_true", help="text search only, no embedder")

    info = sub.add_parser("info", help="show the backend, driver, vector support and counts")
    common(info)
    info.add_argument("--json", action="store_true", help="print JSON")
    info.set_defaults(func=_cmd_info)
    demo = sub.add_parser("demo", help="run an end-to-end offline demo (temporary database)")
    common(demo)
    demo.set_defaults(func=_cmd_demo)
    serve = sub.add_parser(
        "serve", help="serve the hosted NAMS /v1 REST API over the local engine (uvicorn)"
    )
    common(serve)
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument(
        "--port", type=int, default=8765, help="port to bind, 0 = any free port (default 8765)"
    )
    serve.add_argument(
        "--api-key",
        action="append",
        metavar="KEY[=WORKSPACE]",
        help="accept this bearer key (repeatable); KEY=WORKSPACE names its workspace. "
        "Without any, every token is accepted and gets its own workspace",
    )
    serve.add_argument(
        "--max-body-bytes",
        type=int,
        default=None,
        help="refuse larger request bodies with 413 (default 1 MiB)",
    )
    serve.set_defaults(func=_cmd_serve)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
