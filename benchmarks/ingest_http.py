"""Bulk ingest over HTTP with extraction on, beside the bare embedder's batched throughput.

One run starts ``nams-local serve`` (its own process, loopback, temporary database, the
default embedder, extraction as serve does it unless ``--extraction``) and, for each bulk
size in ``--bulks`` (default 10 and 100), posts ``--messages`` fresh chat turns with
``POST /v1/conversations/{id}/messages/bulk`` from ``--concurrency`` clients, each on its
own conversations. It reports:

- **acked msg/s**: messages acknowledged per second (first request to last answer);
- **indexed msg/s**: messages per second until the last message of every conversation
  is found by a *vector* search of its conversation (its vector is stored: the write path
  embeds after the ack, in batches, so the acked rate alone would not count embedding);
  with ``--no-embeddings`` there is no vector index and it equals acked;
- **extracted msg/s**: messages per second until every unit of every conversation has
  left ``pending`` in ``/extraction-status`` (the same as acked when extraction is
  synchronous; with background extraction, the rate the queue really drains at);
- **raw msg/s**: the bare embedder in this process (``default_embedder()``) on the same
  texts, length-sorted, in batches of 32 — timed right before and right after the HTTP
  phase of the same texts, so both see the same machine noise (their mean is the figure).

The ratio indexed / raw is the issue-12 target (>= 0.6): ingest counted until the
vectors are searchable, against the bare embedder in the same run. The server's and this process's
embedders never run at the same time. With ``--no-embeddings`` (``--smoke``) the raw figure
is the model-free hashing embedder: a check that everything runs, not a measurement.

``python -m benchmarks ingest_http --help`` for the options; ``--smoke`` for a quick check.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from nams_local.backend import MAX_BULK_MESSAGES
from nams_local.embeddings import BaseEmbedder, HashingEmbedder, default_embedder

from ._common import message_counts, positive, say
from ._http import wait_extracted
from ._report import BarGroup, add_report_options, machine, publish
from ._serve import ServeProcess, add_serve_options
from ._workload import generate

__all__ = ["main", "raw_embed_rate"]

NAME = "ingest_http"
TARGET_RATIO = 0.6
TOKEN = "ingest-http-bench"
RAW_BATCH = 32
SMOKE_DEFAULTS: dict[str, Any] = {
    "messages": 40,
    "bulks": [10, 20],
    "concurrency": 2,
    "no_embeddings": True,
    "extraction_timeout": 60.0,
}


def _bulks(value: str) -> list[int]:
    """An argparse type: comma-separated bulk sizes, each 1 to the contract's maximum."""
    sizes = message_counts(value)
    if any(s > MAX_BULK_MESSAGES for s in sizes):
        raise argparse.ArgumentTypeError(f"bulk sizes are 1 to {MAX_BULK_MESSAGES}")
    return sizes


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"python -m benchmarks {NAME}",
        description="Bulk ingest over HTTP (extraction on) vs the bare batched embedder.",
    )
    parser.add_argument(
        "--messages", type=positive, default=1000, help="messages per bulk size, default 1000"
    )
    parser.add_argument("--bulks", type=_bulks, default=[10, 100], help="default: 10,100")
    parser.add_argument(
        "--concurrency", type=positive, default=4, help="clients posting at once, default 4"
    )
    parser.add_argument(
        "--messages-per-conversation",
        type=positive,
        default=100,
        help="default 100 (each client fills its own conversations)",
    )
    # Extraction on, as the issue asks: sync or background, never off.
    add_serve_options(parser, extraction=("sync", "background"))
    parser.add_argument(
        "--extraction-timeout",
        type=float,
        default=600.0,
        help="how long to wait for queued extraction to finish, seconds (default 600)",
    )
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--smoke", action="store_true", help="tiny, --no-embeddings")
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    add_report_options(parser)
    return parser


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.smoke:
        parser.set_defaults(**SMOKE_DEFAULTS)
        args = parser.parse_args(argv)
    if args.extraction_timeout <= 0:
        parser.error("--extraction-timeout must be positive")
    return args


def raw_embed_rate(embedder: BaseEmbedder, texts: Sequence[str]) -> float:
    """Texts per second of the bare embedder: length-sorted, in batches of 32."""
    ordered = sorted(texts, key=len)
    start = time.perf_counter()
    for i in range(0, len(ordered), RAW_BATCH):
        embedder.embed(ordered[i : i + RAW_BATCH])
    elapsed = time.perf_counter() - start
    return len(ordered) / elapsed if elapsed else 0.0


def _texts(args: argparse.Namespace, bulk: int) -> list[tuple[str, str]]:
    """Fresh turns for one phase (another seed per bulk size: no cache helps a later one)."""
    work = generate(
        users=4, conversations_per_user=5, messages=args.messages, entities=0,
        seed=args.seed + bulk,
    )  # fmt: skip
    return [(t.role, t.content) for t in work.messages()]


async def _post_phase(
    client: httpx.AsyncClient, args: argparse.Namespace, turns: list[tuple[str, str]], bulk: int
) -> dict[str, Any]:
    """Post ``turns`` in bulks of ``bulk`` from ``--concurrency`` clients; acked and
    extracted rates and the status counts of the answers."""
    per_conv = args.messages_per_conversation
    # Each client gets every k-th turn and conversations of its own.
    shares = [turns[k :: args.concurrency] for k in range(args.concurrency)]
    statuses: dict[str, int] = {}
    conversations: list[str] = []
    #: Each conversation's newest acknowledged message: (id, content).
    newest: dict[str, tuple[str, str]] = {}

    async def conversation(k: int) -> str:
        made = await client.post("/v1/conversations", json={"userId": f"ingest-user-{k}"})
        made.raise_for_status()
        conv = str(made.json()["id"])
        conversations.append(conv)
        return conv

    async def worker(k: int, share: list[tuple[str, str]]) -> None:
        conv, in_conv = await conversation(k), 0
        for i in range(0, len(share), bulk):
            if in_conv >= per_conv:
                conv, in_conv = await conversation(k), 0
            chunk = share[i : i + bulk]
            body = {"messages": [{"role": r, "content": c} for r, c in chunk]}
            answer = await client.post(f"/v1/conversations/{conv}/messages/bulk", json=body)
            key = str(answer.status_code)
            statuses[key] = statuses.get(key, 0) + len(chunk)
            if answer.is_success:
                last = answer.json()["messages"][-1]
                newest[conv] = (str(last["id"]), str(last["content"]))
            in_conv += len(chunk)

    start = time.perf_counter()
    await asyncio.gather(*(worker(k, share) for k, share in enumerate(shares) if share))
    acked_s = time.perf_counter() - start
    unindexed = 0
    if not args.no_embeddings:
        unindexed = await _wait_indexed(client, newest, args.extraction_timeout)
    indexed_s = time.perf_counter() - start
    pending = await wait_extracted(client, conversations, args.extraction_timeout)
    extracted_s = time.perf_counter() - start
    n = len(turns)
    ok = sum(v for k, v in statuses.items() if k.startswith("2"))
    return {
        "bulk": bulk,
        "messages": n,
        "acked_messages": ok,
        "statuses": statuses,
        "acked_seconds": acked_s,
        "acked_per_second": ok / acked_s if acked_s else 0.0,
        "indexed_seconds": indexed_s,
        "indexed_per_second": ok / indexed_s if indexed_s and not unindexed else None,
        "unindexed_after_timeout": unindexed,
        "extracted_seconds": extracted_s,
        "extracted_per_second": ok / extracted_s if extracted_s and not pending else None,
        "unfinished_after_timeout": pending,
        "conversations": len(conversations),
    }


async def _wait_indexed(
    client: httpx.AsyncClient, newest: dict[str, tuple[str, str]], timeout: float
) -> int:
    """Until every conversation's newest message is found by a vector search of its
    conversation (bounded); how many were still not found at the end (0 = all). A vector
    search waits for its own scope's queued vectors, so one search per conversation
    usually suffices; the loop covers a store that answered before they were stored."""
    deadline = time.monotonic() + timeout
    missing = dict(newest)
    while missing:
        for conv, (message_id, content) in list(missing.items()):
            answer = await client.post(
                f"/v1/conversations/{conv}/search",
                json={"query": content, "limit": 10, "mode": "vector"},
            )
            answer.raise_for_status()
            if any(m["id"] == message_id for m in answer.json()["messages"]):
                del missing[conv]
        if missing and time.monotonic() > deadline:
            break
        if missing:
            await asyncio.sleep(0.05)
    return len(missing)


def _run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    started = machine()
    embedder: BaseEmbedder = HashingEmbedder() if args.no_embeddings else default_embedder()
    embedder.embed(["warm-up: load the model before anything is timed"])
    rows: list[dict[str, Any]] = []
    server = ServeProcess.from_options(args, tmp)
    say(args, f"[{NAME}] starting nams-local serve")
    with server:
        asyncio.run(_warm_up(server.base_url))
        for bulk in args.bulks:
            turns = _texts(args, bulk)
            texts = [c for _, c in turns]
            say(args, f"[{NAME}] bulk {bulk}: bare embedder, then {len(turns)} messages over HTTP")
            before = raw_embed_rate(embedder, texts)
            phase = asyncio.run(_phase(server.base_url, args, turns, bulk))
            after = raw_embed_rate(embedder, texts)
            raw = (before + after) / 2
            phase.update(
                raw_before_per_second=before,
                raw_after_per_second=after,
                raw_per_second=raw,
                acked_over_raw=phase["acked_per_second"] / raw if raw else None,
                indexed_over_raw=(
                    phase["indexed_per_second"] / raw
                    if raw and phase["indexed_per_second"]
                    else None
                ),
                extracted_over_raw=(
                    phase["extracted_per_second"] / raw
                    if raw and phase["extracted_per_second"]
                    else None
                ),
            )
            rows.append(phase)
    # The target counts until the vectors are stored (indexed); without a vector index
    # (--no-embeddings) there is nothing to wait for and acked is the figure.
    measure = "acked_over_raw" if args.no_embeddings else "indexed_over_raw"
    ratios = [r[measure] for r in rows]
    return {
        "machine": started,
        "embedder": embedder.name,
        "settings": {
            "messages": args.messages,
            "bulks": args.bulks,
            "concurrency": args.concurrency,
            "messages_per_conversation": args.messages_per_conversation,
            "extraction": args.extraction,
            "no_embeddings": args.no_embeddings,
            "smoke": args.smoke,
        },
        "phases": rows,
        "verdict": {
            "target_ratio": TARGET_RATIO,
            "measure": measure,
            "min_acked_over_raw": min(
                (r["acked_over_raw"] for r in rows if r["acked_over_raw"] is not None),
                default=None,
            ),
            "min_ratio": None if not ratios or None in ratios else min(ratios),
            "met": bool(ratios) and None not in ratios and min(ratios) >= TARGET_RATIO,
        },
    }


async def _phase(
    base_url: str, args: argparse.Namespace, turns: list[tuple[str, str]], bulk: int
) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    limits = httpx.Limits(max_connections=args.concurrency + 2)
    async with httpx.AsyncClient(
        base_url=base_url, headers=headers, timeout=300.0, limits=limits
    ) as client:
        return await _post_phase(client, args, turns, bulk)


async def _warm_up(base_url: str) -> None:
    """One small bulk first, so the server's first-request costs (its model, its caches)
    are not charged to the first bulk size."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=300.0) as client:
        made = await client.post("/v1/conversations", json={"userId": "warm-up"})
        made.raise_for_status()
        body = {"messages": [{"role": "user", "content": f"warm-up message {i}"} for i in range(5)]}
        answer = await client.post(
            f"/v1/conversations/{made.json()['id']}/messages/bulk", json=body
        )
        answer.raise_for_status()


def _fmt(value: float | None, spec: str = ".1f") -> str:
    return "-" if value is None else format(value, spec)


def render(results: dict[str, Any]) -> str:
    s = results["settings"]
    lines = [
        f"nams-local benchmark: {NAME}",
        f"  nams-local serve on 127.0.0.1, embedder {results['embedder']}, extraction "
        f"{s['extraction'] or 'serve default'}; {s['messages']} messages per bulk size from "
        f"{s['concurrency']} clients, {s['messages_per_conversation']} per conversation",
        "",
        f"  {'bulk':>5} {'acked/s':>9} {'indexed/s':>10} {'extracted/s':>12} {'raw/s':>8} "
        f"{'acked/raw':>10} {'idx/raw':>8} {'extr/raw':>9} {'non-2xx':>8}",
    ]
    for r in results["phases"]:
        non_ok = sum(v for k, v in r["statuses"].items() if not k.startswith("2"))
        lines.append(
            f"  {r['bulk']:>5} {r['acked_per_second']:>9.1f} "
            f"{_fmt(r['indexed_per_second']):>10} "
            f"{_fmt(r['extracted_per_second']):>12} {r['raw_per_second']:>8.1f} "
            f"{_fmt(r['acked_over_raw'], '.2f'):>10} {_fmt(r['indexed_over_raw'], '.2f'):>8} "
            f"{_fmt(r['extracted_over_raw'], '.2f'):>9} {non_ok:>8}"
        )
        if r["unindexed_after_timeout"]:
            lines.append(
                f"        {r['unindexed_after_timeout']} conversations' newest message still "
                "not found by vector search when the wait ran out"
            )
        if r["unfinished_after_timeout"]:
            lines.append(
                f"        {r['unfinished_after_timeout']} extraction units still unfinished "
                "when the wait ran out"
            )
    v = results["verdict"]
    lines += [
        "",
        "  acked/s: messages acknowledged per second over HTTP (first request to last answer);",
        "  indexed/s: until each conversation's newest message is found by vector search;",
        "  extracted/s: until /extraction-status shows nothing pending; raw/s: the bare "
        "embedder on the same texts, length-sorted, batches of 32 (mean of before and after)",
        f"  {'acked' if v['measure'] == 'acked_over_raw' else 'indexed'} / raw >= "
        f"{TARGET_RATIO}: "
        + (
            f"{v['min_ratio']:.2f} at the worst bulk size ({_ok(v['met'])})"
            if v["min_ratio"] is not None
            else "not measured"
        ),
        f"  machine: {results['machine']['cpu_count']} cores, load avg before "
        + " ".join(f"{x:.2f}" for x in results["machine"].get("load_average") or [])
        + "; server and the bare embedder take turns on it",
    ]
    return "\n".join(lines)


def _ok(flag: bool) -> str:
    return "met" if flag else "MISSED"


def _panels(results: dict[str, Any]) -> list[BarGroup]:
    phases = results["phases"]
    return [
        BarGroup(
            "ingest (messages / s)",
            "messages / s",
            [f"bulk {r['bulk']}" for r in phases],
            {
                "HTTP acked": [r["acked_per_second"] for r in phases],
                "HTTP indexed": [r["indexed_per_second"] or 0.0 for r in phases],
                "HTTP extracted": [r["extracted_per_second"] or 0.0 for r in phases],
                "bare embedder": [r["raw_per_second"] for r in phases],
            },
        )
    ]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="nams-bench-ingest-http-") as tmp:
        results = _run(args, Path(tmp))
    publish(args, NAME, results, render(results), argv=argv, panels=_panels(results))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
