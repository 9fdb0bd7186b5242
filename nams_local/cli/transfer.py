"""``nams-local export`` and ``nams-local import``: memory that can leave (issue 19).

``export`` streams a workspace of the local engine (or one user's memory in it) to the
line-delimited JSON format of ``docs/export-format.md``; ``import`` reads such a file into
the configured backend: the local engine (``--db``, records kept as they are) or hosted
NAMS (``NAMS_BACKEND=hosted``: records replayed through the API, ids recorded in
``--id-map``). Both report on stderr with a progress line on a terminal; failures are one
line (``failures.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import IO, Any

from ..errors import InvalidInputError
from .options import add_workspace
from .progress import Progress

__all__ = ["register"]


def register(subparsers: Any) -> None:
    export = subparsers.add_parser(
        "export", help="write a workspace's memory to a line-delimited JSON file"
    )
    export.add_argument("--db", help="SQLite database file (default $NAMS_LOCAL_DB)")
    add_workspace(export)
    export.add_argument("--user", default=None, metavar="U", help="only this user's memory")
    export.add_argument(
        "-o", "--output", required=True, metavar="FILE", help="the file to write; - = stdout"
    )
    export.add_argument(
        "--with-vectors",
        action="store_true",
        help="include the stored vectors (else an import re-embeds)",
    )
    export.set_defaults(func=_cmd_export)

    imp = subparsers.add_parser(
        "import", help="read an export file into the configured backend (idempotent)"
    )
    imp.add_argument("file", metavar="FILE", help="the export file; - = stdin")
    imp.add_argument("--db", help="SQLite database file (default $NAMS_LOCAL_DB)")
    add_workspace(imp)
    imp.add_argument(
        "--no-embeddings", action="store_true", help="open the local engine without embeddings"
    )
    imp.add_argument(
        "--id-map",
        default=None,
        metavar="PATH",
        help="hosted target: file of target ids by source id, kept between runs so a "
        "second import changes nothing",
    )
    imp.add_argument("--json", action="store_true", help="print the report as JSON")
    imp.set_defaults(func=_cmd_import)


# -- export ----------------------------------------------------------------------------
def _cmd_export(args: argparse.Namespace) -> int:
    from ..config import backend_kind, default_db_path, local_store_embedded, open_local_backend

    if args.db is None and backend_kind() == "hosted":
        raise InvalidInputError(
            "export reads the local engine: give --db (hosted NAMS has no export)"
        )
    db = args.db if args.db is not None else default_db_path()
    if db == ":memory:" or not Path(db).expanduser().is_file():
        raise InvalidInputError(f"no database at {db}")
    options: dict[str, Any] = {
        "embeddings": bool(local_store_embedded(db)),  # as built: opening must not re-embed
        "extraction": "off",  # reading only: no pending extraction resumes
    }
    if args.workspace is not None:
        options["workspace"] = args.workspace
    backend = open_local_backend(db, **options)
    try:
        progress = Progress("export", "records")
        try:
            count = _export_to(args.output, backend, args, progress)
        finally:
            progress.close()
    finally:
        asyncio.run(backend.aclose())
    where = "stdout" if args.output == "-" else args.output
    hint = " (it holds nothing: `nams-local info` lists the workspaces)" if not count else ""
    print(
        f"exported {count} records of workspace {backend.workspace!r} to {where}{hint}",
        file=sys.stderr,
    )
    return 0


def _export_to(output: str, backend: Any, args: argparse.Namespace, progress: Progress) -> int:
    """Write to stdout, or to ``output`` through a temporary file renamed at the end, so a
    failed export never leaves a file that could pass for one."""
    from ..transfer import write_export

    def write(out: IO[bytes]) -> int:
        return write_export(
            backend,
            out,
            user_id=args.user,
            with_vectors=args.with_vectors,
            progress=progress.update,
        )

    if output == "-":
        count = write(sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return count
    target = Path(output).expanduser()
    partial = target.with_name(target.name + ".partial")
    try:
        with partial.open("wb") as out:
            count = write(out)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return count


# -- import ----------------------------------------------------------------------------
def _cmd_import(args: argparse.Namespace) -> int:
    from ..config import backend_kind, open_hosted_backend, open_local_backend
    from ..export_format import MAX_LINE_BYTES, parse_header

    hosted = args.db is None and backend_kind() == "hosted"
    with _open_input(args.file) as stream:
        # The header first: a foreign or newer file is refused before any store opens.
        first = stream.readline(MAX_LINE_BYTES + 1)
        header = parse_header(first)
        if hosted:
            backend = open_hosted_backend(workspace_id=args.workspace)
            workspace = args.workspace
        else:
            options: dict[str, Any] = {
                "embeddings": not args.no_embeddings,
                "extraction": "off",  # a pure copy: pending extraction stays pending
                # Default: the workspace the file came from (its ids are then kept).
                "workspace": args.workspace or header.workspace,
            }
            backend = open_local_backend(args.db, **options)
            workspace = backend.workspace
        id_map = _load_map(args.id_map)
        progress = Progress("import", "records")
        try:
            report = asyncio.run(
                _import(backend, _Replayed(first, stream), workspace, id_map, progress, hosted)
            )
        finally:
            progress.close()
            if args.id_map is not None:
                _save_map(args.id_map, id_map)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print_report(report)
    return 0


async def _import(
    backend: Any,
    stream: Any,
    workspace: str | None,
    id_map: dict[str, str],
    progress: Progress,
    hosted: bool,
) -> dict[str, Any]:
    from ..transfer import import_stream

    try:
        # Into the workspace the file came from, ids are kept; into another one, they are
        # remapped (``remap_ids``). Hosted NAMS assigns its own ids anyway (the id map).
        report = await import_stream(
            backend,
            stream,
            workspace=None if hosted else workspace,
            id_map=id_map,
            progress=progress.update,
        )
    finally:
        await backend.aclose()
    details = report.as_dict()
    details["target_workspace"] = workspace
    return details


class _Replayed:
    """A byte stream whose first line was already read: it is given back first."""

    def __init__(self, first: bytes, rest: IO[bytes]) -> None:
        self.first: bytes | None = first
        self.rest = rest

    def readline(self, limit: int = -1, /) -> bytes:
        if self.first is not None:
            line, self.first = self.first, None
            return line
        return self.rest.readline(limit)


class _open_input:
    """The input file as bytes (``-``: stdin), closed afterwards if it was opened here."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.stream: IO[bytes] | None = None

    def __enter__(self) -> IO[bytes]:
        if self.name == "-":
            return sys.stdin.buffer
        path = Path(self.name).expanduser()
        if not path.is_file():
            raise InvalidInputError(f"no export file at {self.name}")
        self.stream = path.open("rb")
        return self.stream

    def __exit__(self, *exc: object) -> None:
        if self.stream is not None:
            self.stream.close()


def _load_map(path: str | None) -> dict[str, str]:
    if path is None or not Path(path).exists():
        return {}
    try:
        loaded = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidInputError(f"--id-map {path} is not an id map: {exc}") from None
    if not isinstance(loaded, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in loaded.items()
    ):
        raise InvalidInputError(f"--id-map {path} is not an id map (an object of strings)")
    return loaded


def _save_map(path: str, id_map: dict[str, str]) -> None:
    target = Path(path)
    partial = target.with_name(target.name + ".partial")
    partial.write_text(json.dumps(id_map), encoding="utf-8")
    os.replace(partial, target)


def _print_report(report: dict[str, Any]) -> None:
    added = report["added"]
    total = sum(added.values())
    print(
        f"imported {report['records']} records into workspace {report['target_workspace']!r} "
        f"({report['path']}{', ids remapped' if report['remapped_ids'] else ''}): "
        f"{total} added, {report['present']} already present, {report['skipped']} skipped"
    )
    for kind, n in added.items():
        print(f"  {kind}: {n} added")
    for skip in report["skipped_records"]:
        print(f"  skipped line {skip['line']} ({skip['kind']}): {skip['reason']}")
    if report["skipped"] > len(report["skipped_records"]):
        print(f"  ... and {report['skipped'] - len(report['skipped_records'])} more skipped")
