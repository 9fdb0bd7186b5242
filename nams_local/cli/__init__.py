"""The ``nams-local`` command: inspect a database, run an offline demo, serve the REST API.

``info`` answers "what am I running on?" (driver, vector support, counts), ``demo``
proves, end to end and with no key or network, that the engine stores, searches and links
memories, ``serve`` makes the engine look like hosted NAMS to any client over HTTP, and
``mcp`` serves memory as MCP tools (stdio or streamable HTTP) to any MCP client, and
``export`` / ``import`` move memory out and in (``transfer.py``).
Heavy imports happen inside the commands so ``--help`` is instant. A new command goes in a
module of this package named for it (its body and a ``register(subparsers)``), wired here
by one call, so commands do not grow one file.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..__version__ import __version__
from . import info, purge, sync, transfer
from .failures import OneLineParser, guarded, port_number
from .options import add_common, add_workspace

__all__ = ["main"]


def _open(db: str | None, embeddings: bool) -> Any:
    from ..config import open_local_backend

    return open_local_backend(db, embeddings=embeddings)


def _check_backend_setting() -> None:
    """``NAMS_BACKEND`` must name a backend even for commands that always run the local
    engine (``demo``, ``serve``): a typo is refused, never silently ignored."""
    from ..config import backend_kind

    backend_kind()


def _cmd_demo(args: argparse.Namespace) -> int:
    _check_backend_setting()
    with tempfile.TemporaryDirectory(prefix="nams-demo-") as tmp:
        db = args.db or str(Path(tmp) / "demo.db")
        backend = _open(db, not args.no_embeddings)

        async def run() -> None:
            from ..demo import run_demo

            try:
                await run_demo(backend, sys.stdout)
            finally:
                await backend.aclose()

        asyncio.run(run())
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    from ..server.serve import run

    _check_backend_setting()
    return run(
        host=args.host,
        port=args.port,
        db=args.db,
        api_keys=args.api_key or [],
        embeddings=not args.no_embeddings,
        max_body_bytes=args.max_body_bytes,
        bridge=args.bridge_db if args.bridge else None,
        extraction=args.extraction,
        cypher_timeout=args.cypher_timeout,
        cypher_memory_mb=args.cypher_memory_mb,
        ready_file=args.ready_file,
        allow_reset=args.allow_reset,
        ui=not args.no_ui,
        workers=args.workers,
    )


def _cmd_mcp(args: argparse.Namespace) -> int:
    from ..mcp_serve import run

    return run(
        transport=args.transport,
        host=args.host,
        port=args.port,
        db=args.db,
        embeddings=not args.no_embeddings,
        user_id=args.user_id,
        conversation_id=args.conversation_id,
        workspace=args.workspace,
    )


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="nams-local", description="Graph-shaped memory for AI agents, offline."
    )
    parser.add_argument("--version", action="version", version=f"nams-local {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="show the full traceback when a command fails"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    info.register(sub)
    sync.register(sub)
    transfer.register(sub)
    purge.register(sub)
    demo = sub.add_parser("demo", help="run an end-to-end offline demo (temporary database)")
    add_common(demo)
    demo.set_defaults(func=_cmd_demo)
    serve = sub.add_parser(
        "serve", help="serve the hosted NAMS /v1 REST API over the local engine (uvicorn)"
    )
    add_common(serve)
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument(
        "--port",
        type=port_number,
        default=8765,
        help="port to bind, 0 = any free port (default 8765)",
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
    serve.add_argument(
        "--cypher-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop a POST /v1/query that runs longer (400 naming the limit; default 5)",
    )
    serve.add_argument(
        "--cypher-memory-mb",
        type=int,
        default=None,
        metavar="MB",
        help="memory one Cypher query may use in its worker process (default 512)",
    )
    serve.add_argument(
        "--bridge",
        action="store_true",
        help="also serve the TCK bridge protocol at /bridge (no auth, loopback only, its own "
        "store; see docs/bridge.md)",
    )
    serve.add_argument(
        "--bridge-db",
        default=":memory:",
        metavar="PATH",
        help="the bridge's own database (default :memory:); wiped by the TCK between scenarios",
    )
    serve.add_argument(
        "--extraction",
        choices=("sync", "background", "off"),
        default=None,
        help="entity extraction and summaries: in the background after the write is "
        "acknowledged (background), before it (sync), or off; default $NAMS_EXTRACTION, "
        "else background",
    )
    serve.add_argument(
        "--ready-file",
        default=None,
        metavar="PATH",
        help="once serving, write the bound endpoint there as JSON ({endpoint, baseUrl, port, "
        "pid}); removed on exit. For CI scripts with --port 0",
    )
    serve.add_argument(
        "--allow-reset",
        action="store_true",
        help="add POST /v1/testing/reset, which empties the caller's workspace (test suites)",
    )
    serve.add_argument(
        "--no-ui",
        action="store_true",
        help="do not serve the memory inspector at /ui (docs/inspector.md); it is on by "
        "default, behind the same keys as /v1",
    )
    serve.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="serve from N processes over the one database file (a supervisor starts, "
        "watches and stops them; docs/sharing-a-file.md#workers); default 1",
    )
    serve.set_defaults(func=_cmd_serve)
    mcp = sub.add_parser(
        "mcp",
        help="serve memory as MCP tools (query_memory, store_memory, entity and graph reads)",
    )
    add_common(mcp)
    mcp.add_argument(
        "--transport", choices=["stdio", "http"], default="stdio", help="default stdio"
    )
    mcp.add_argument("--host", default="127.0.0.1", help="http: address to bind")
    mcp.add_argument(
        "--port", type=port_number, default=8766, help="http: port, 0 = any (default 8766)"
    )
    add_workspace(mcp)
    mcp.add_argument("--user-id", default="default", help="whose memory (default 'default')")
    mcp.add_argument(
        "--conversation-id", default=None, help="default: the user's latest conversation"
    )
    mcp.set_defaults(func=_cmd_mcp)
    bench = sub.add_parser(
        "bench",
        help="run a benchmark from a source checkout (python -m benchmarks NAME)",
        add_help=False,
    )
    bench.add_argument("bench_args", nargs=argparse.REMAINDER)
    bench.set_defaults(func=_cmd_bench)
    return parser


def _cmd_bench(args: argparse.Namespace) -> int:
    return _run_bench(list(args.bench_args))


def _run_bench(bench_args: list[str]) -> int:
    """``nams-local bench NAME [options]`` = ``python -m benchmarks NAME [options]``.

    The benchmarks are not part of the installed package (they need the source tree's
    workloads and extras), so this finds them beside the package in a checkout.
    """
    import importlib

    root = str(Path(__file__).resolve().parents[2])  # nams_local/cli/__init__.py
    if not (Path(root) / "benchmarks" / "__main__.py").exists():
        print("nams-local bench needs a source checkout (benchmarks/ beside nams_local/)")
        return 2
    if root not in sys.path:
        sys.path.insert(0, root)
    runner = importlib.import_module("benchmarks.__main__")
    code: int = runner.main(bench_args)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:1] == ["bench"]:  # everything after it, --help included, is the benchmark's
        return _run_bench(given[1:])
    args = _parser().parse_args(argv)
    return guarded(args.command, lambda: int(args.func(args)), debug=args.debug)
