"""Export (and import) of a large store: time, records per second and peak memory.

Builds a store of ``--messages`` messages (default 100,000: users of conversations of
100 messages, embeddings and extraction off unless asked for) or reuses ``--db``, then runs
``nams-local export`` on it in a child process, which reports its own wall time and peak
resident memory (``VmHWM`` from ``/proc/self/status``, Linux). Export streams in keyset
pages, so its peak memory should not grow with the store: ``--messages 10000`` against
the default shows it. ``--import`` also imports the file into a fresh database, in a child
process the same way.

Run ``python -m benchmarks export --help`` for the options.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from backends.sqlite import SQLiteBackend
from nams_local import NewMessage

from ._common import Progress, file_size, load_average, mb, positive, say
from ._report import add_report_options, publish

__all__ = ["build", "main", "measure"]

NAME = "export"
ROOT = Path(__file__).resolve().parents[1]
PER_CONVERSATION = 100
VOCABULARY = (
    "alice bob berlin lisbon coffee meeting project deadline flight hotel dinner cat dog "
    "garden budget report invoice doctor school piano guitar football recipe pasta train "
    "weekend holiday museum concert friend sister brother office laptop phone password"
)
WORDS = VOCABULARY.split()

#: The child: run the real CLI in-process, then print its own time and peak memory.
CHILD = r"""
import json, sys, time
from nams_local.cli import main
start = time.perf_counter()
code = main(sys.argv[1:])
seconds = time.perf_counter() - start
peak_kb = 0
with open("/proc/self/status") as status:
    for line in status:
        if line.startswith("VmHWM:"):
            peak_kb = int(line.split()[1])
print(json.dumps({"code": code, "seconds": seconds, "peak_kb": peak_kb}), file=sys.stderr)
"""


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 30))).capitalize() + "."


async def build(db: Path, messages: int, *, extract: bool, quiet: bool) -> None:
    """A store of ``messages`` messages in conversations of ``PER_CONVERSATION``."""
    backend = SQLiteBackend(
        db, embeddings=False, extraction="sync" if extract else "off", summariser=None
    )
    rng = random.Random(19)
    progress = Progress("build", messages, enabled=not quiet)
    try:
        done = 0
        while done < messages:
            conv = await backend.create_conversation(f"user-{done // 10_000}", {"n": done})
            size = min(PER_CONVERSATION, messages - done)
            for start in range(0, size, 100):
                bulk = [
                    NewMessage(role="user" if i % 2 else "assistant", content=_text(rng))
                    for i in range(min(100, size - start))
                ]
                await backend.add_messages(conv.id, bulk)
            done += size
            progress.update(done)
    finally:
        await backend.aclose()


def measure(*cli_args: str) -> dict[str, Any]:
    """Run ``nams-local <cli_args>`` in a child; its exit code, seconds and peak KiB."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *cli_args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=3600,
        check=False,
    )
    last = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "{}"
    try:
        result: dict[str, Any] = json.loads(last)
    except ValueError:
        result = {"code": done.returncode}
    if result.get("code") != 0:
        raise RuntimeError(f"nams-local {' '.join(cli_args)} failed: {done.stderr.strip()}")
    return result


def _records(path: Path) -> int:
    with path.open("rb") as lines:
        last = b""
        for line in lines:
            last = line
    count: int = json.loads(last)["records"]
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks export", description=__doc__)
    parser.add_argument("--messages", type=positive, default=100_000, help="default 100000")
    parser.add_argument("--db", type=Path, default=None, help="reuse (or build) this store")
    parser.add_argument("--extract", action="store_true", help="build with rule extraction")
    parser.add_argument("--with-vectors", action="store_true", help="export --with-vectors")
    parser.add_argument("--import", dest="do_import", action="store_true", help="also import")
    add_report_options(parser)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="nams-export-") as tmp:
        db = args.db or Path(tmp) / "store.db"
        built = False
        if not db.exists():
            say(args, f"[export] building {args.messages} messages in {db}")
            asyncio.run(build(db, args.messages, extract=args.extract, quiet=args.quiet))
            built = True
        out = Path(tmp) / "export.jsonl"
        load_before = load_average()
        cli = ["export", "--db", str(db), "-o", str(out)]
        exported = measure(*cli, *(["--with-vectors"] if args.with_vectors else []))
        records = _records(out)
        results: dict[str, Any] = {
            "store": {"path": str(db), "built": built, "bytes": file_size(db)},
            "export": {
                **exported,
                "records": records,
                "records_per_second": records / exported["seconds"],
                "file_bytes": out.stat().st_size,
            },
            "load_before": load_before,
        }
        if args.do_import:
            target = Path(tmp) / "imported.db"
            imported = measure("import", str(out), "--db", str(target), "--no-embeddings")
            results["import"] = {**imported, "records_per_second": records / imported["seconds"]}
    publish(args, NAME, results, _table(results), argv=argv, panels=[])
    return 0


def _table(results: dict[str, Any]) -> str:
    e = results["export"]
    lines = [
        f"store: {mb(results['store']['bytes'])}, {e['records']} records "
        f"({'built for this run' if results['store']['built'] else 'reused'})",
        f"{'':8}{'seconds':>9}{'records/s':>12}{'peak RSS':>12}",
        f"{'export':8}{e['seconds']:>9.1f}{e['records_per_second']:>12,.0f}"
        f"{mb(e['peak_kb'] * 1024):>12}   file {mb(e['file_bytes'])}",
    ]
    if "import" in results:
        i = results["import"]
        lines.append(
            f"{'import':8}{i['seconds']:>9.1f}{i['records_per_second']:>12,.0f}"
            f"{mb(i['peak_kb'] * 1024):>12}"
        )
    lines.append(
        "  peak RSS: VmHWM of the child process running the command (interpreter, "
        "engine and embedder imports included)"
    )
    load = results.get("load_before")
    if load:
        lines.append(f"  load avg before: {' '.join(f'{x:.2f}' for x in load)}")
    return "\n".join(lines)
