"""nams-local next to its peers: the same ingest and search workload, latency and recall.

The workload is the ``quality`` benchmark's synthetic set (multi-session chats with planted
facts and questions naming their evidence). Each system stores every user's messages and
answers every question with its top 10, scoped to the user:

- **nams-local**: ``SQLiteBackend`` (one conversation per user, ``add_messages`` in bulks,
  ``search_messages`` in the default hybrid mode);
- **mem0**: the open-source ``mem0.Memory`` with no LLM (``add(..., infer=False)`` stores
  each message verbatim), its default local vector store (Qdrant in local mode, on disk),
  ``search(query, filters={"user_id": ...})``;
- **chroma**: a plain persistent Chroma collection, a ``user`` metadata filter.

All three use the same embedder (the int8 ONNX all-MiniLM-L6-v2 nams-local ships), handed
to the peers through their own extension points (a mem0 ``EmbeddingBase``, a Chroma
``EmbeddingFunction``), so no peer downloads a model and the comparison is of the stores,
not of the models. Search time includes embedding the query (each system embeds it once).
A peer that is not installed or cannot run offline is reported with the exact reason.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import logging
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from backends.sqlite import SQLiteBackend
from nams_local.backend import MAX_BULK_MESSAGES
from nams_local.embeddings import BaseEmbedder, HashingEmbedder, MiniLMEmbedder
from nams_local.models import NewMessage

from ._common import Progress, add_embedder_options, name_list, percentile, say
from ._report import BarGroup, add_report_options, machine, publish
from .quality import Corpus, CorpusMessage, add_synthetic_options, recall, synthetic_corpus

__all__ = ["main"]

NAME = "peers"
PEERS = ("nams-local", "mem0", "chroma")
KS = (1, 5, 10)
TOP = 10
TARGET_SPEEDUP = 3.0
MEM0_BATCH = 10  # messages per mem0 add() call (it embeds them one by one anyway)


class Unavailable(Exception):
    """This peer cannot run here; the message says exactly why."""


@dataclass
class PeerResult:
    name: str
    detail: str = ""
    ingest_seconds: float = 0.0
    messages: int = 0
    search_ms: list[float] = field(default_factory=list)
    recalls: dict[int, list[float]] = field(default_factory=lambda: {k: [] for k in KS})
    skipped: str | None = None

    def summary(self) -> dict[str, Any]:
        if self.skipped is not None:
            return {"skipped": self.skipped, "detail": self.detail}
        ms = self.search_ms
        return {
            "detail": self.detail,
            "messages": self.messages,
            "ingest_seconds": self.ingest_seconds,
            "ingest_per_second": self.messages / self.ingest_seconds if self.ingest_seconds else 0,
            "searches": len(ms),
            "search_p50_ms": percentile(ms, 50),
            "search_p95_ms": percentile(ms, 95),
            "search_mean_ms": sum(ms) / len(ms) if ms else 0.0,
            "recall": {f"@{k}": sum(v) / len(v) if v else 0.0 for k, v in self.recalls.items()},
        }


#: ``search(user_id, question) -> message keys, best first``
Searcher = Callable[[str, str], Sequence[str]]


def _ingest(
    result: PeerResult,
    corpus: Corpus,
    batch_size: int,
    add: Callable[[str, Sequence[CorpusMessage]], None],
    quiet: bool,
) -> None:
    """Every user's messages through ``add(user_id, batch)``, ``batch_size`` at a time, timed
    (the peers' ingest loop; nams-local's is async and keeps its own)."""
    progress = Progress(f"{result.name} add", corpus.message_count, enabled=not quiet)
    done = 0
    start = time.perf_counter()
    for user in corpus.users:
        for i in range(0, len(user.messages), batch_size):
            batch = user.messages[i : i + batch_size]
            add(user.user_id, batch)
            done += len(batch)
            progress.update(done)
    result.ingest_seconds = time.perf_counter() - start
    result.messages = done


def _score(
    result: PeerResult, corpus: Corpus, search: Searcher, order: Sequence[int], quiet: bool
) -> None:
    progress = Progress(f"{result.name} search", len(order), enabled=not quiet)
    for done, i in enumerate(order, 1):
        q = corpus.questions[i]
        start = time.perf_counter()
        keys = search(q.user_id, q.question)
        result.search_ms.append((time.perf_counter() - start) * 1000.0)
        for k in KS:
            result.recalls[k].append(recall(q.evidence, keys, k))
        progress.update(done)


# -- nams-local ------------------------------------------------------------------------------
def run_nams(
    corpus: Corpus, embedder: BaseEmbedder, folder: Path, order: Sequence[int], quiet: bool
) -> PeerResult:
    result = PeerResult("nams-local", "SQLiteBackend, search_messages default (hybrid) mode")

    async def go() -> None:
        backend = SQLiteBackend(folder / "nams.sqlite3", embedder=embedder)
        conv_of: dict[str, str] = {}
        key_of: dict[str, str] = {}
        try:
            start = time.perf_counter()
            for user in corpus.users:
                conv = await backend.create_conversation(user.user_id)
                conv_of[user.user_id] = conv.id
                for i in range(0, len(user.messages), MAX_BULK_MESSAGES):
                    batch = user.messages[i : i + MAX_BULK_MESSAGES]
                    written = await backend.add_messages(
                        conv.id, [NewMessage(role=m.role, content=m.content) for m in batch]
                    )
                    key_of.update({w.id: m.key for m, w in zip(batch, written, strict=True)})
            result.ingest_seconds = time.perf_counter() - start
            result.messages = corpus.message_count
            progress = Progress("nams-local search", len(order), enabled=not quiet)
            for done, i in enumerate(order, 1):
                q = corpus.questions[i]
                start = time.perf_counter()
                found = await backend.search_messages(conv_of[q.user_id], q.question, TOP)
                result.search_ms.append((time.perf_counter() - start) * 1000.0)
                keys = [key_of[m.id] for m in found.items]
                for k in KS:
                    result.recalls[k].append(recall(q.evidence, keys, k))
                progress.update(done)
        finally:
            await backend.aclose()

    asyncio.run(go())
    return result


# -- mem0 ------------------------------------------------------------------------------------
def _require(module: str, extra: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise Unavailable(f"{module} is not installed (pip install -e '.[{extra}]')")


def run_mem0(
    corpus: Corpus, embedder: BaseEmbedder, folder: Path, order: Sequence[int], quiet: bool
) -> PeerResult:
    _require("mem0", "bench")
    os.environ.setdefault("MEM0_TELEMETRY", "False")  # no analytics calls from a benchmark
    from mem0 import Memory  # type: ignore[import-untyped,import-not-found,unused-ignore]
    from mem0.embeddings.base import EmbeddingBase  # type: ignore[import-untyped,import-not-found,unused-ignore]

    class SharedEmbedder(EmbeddingBase):  # type: ignore[misc]
        """mem0's embedder extension point, backed by nams-local's embedder."""

        def embed(self, text: str, memory_action: str | None = None) -> list[float]:
            return [float(x) for x in embedder.embed([text])[0]]

        def embed_batch(self, texts: list[str], memory_action: str = "add") -> list[list[float]]:
            return [[float(x) for x in row] for row in embedder.embed(list(texts))]

    config = {
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "path": str(folder / "mem0-qdrant"),
                "on_disk": True,
                "collection_name": "bench",
                "embedding_model_dims": embedder.dimension,
            },
        },
        # mem0 builds an LLM and an embedder client at start-up even when neither is used;
        # with infer=False and the embedder replaced below, no request is ever made.
        "embedder": {
            "provider": "openai",
            "config": {"api_key": "unused-offline", "embedding_dims": embedder.dimension},
        },
        "llm": {"provider": "openai", "config": {"api_key": "unused-offline"}},
        "history_db_path": str(folder / "mem0-history.db"),
    }
    for noisy in ("mem0", "httpx"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    try:
        memory = Memory.from_config(config)
    except Exception as exc:
        raise Unavailable(
            f"mem0 Memory did not start offline: {type(exc).__name__}: {exc}"
        ) from exc
    memory.embedding_model = SharedEmbedder()
    detail = "mem0 Memory, infer=False, Qdrant local (on disk)"
    if importlib.util.find_spec("fastembed") is None:
        detail += "; vector-only (its BM25 needs fastembed, which downloads a model)"
    result = PeerResult("mem0", detail)
    key_of: dict[str, str] = {}

    def add(user_id: str, batch: Sequence[CorpusMessage]) -> None:
        added = memory.add(
            [{"role": m.role, "content": m.content} for m in batch], user_id=user_id, infer=False
        )
        for m, row in zip(batch, added["results"], strict=True):
            key_of[row["id"]] = m.key

    _ingest(result, corpus, MEM0_BATCH, add, quiet)

    def search(user_id: str, question: str) -> list[str]:
        found = memory.search(question, filters={"user_id": user_id}, top_k=TOP, threshold=0.0)
        return [key_of.get(row["id"], "") for row in found["results"]]

    _score(result, corpus, search, order, quiet)
    return result


# -- chroma ----------------------------------------------------------------------------------
def run_chroma(
    corpus: Corpus, embedder: BaseEmbedder, folder: Path, order: Sequence[int], quiet: bool
) -> PeerResult:
    _require("chromadb", "bench")
    import chromadb
    from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
    from chromadb.config import Settings

    class SharedEmbedding(EmbeddingFunction[Documents]):
        """Chroma's embedding-function extension point, backed by nams-local's embedder."""

        def __init__(self) -> None:
            pass

        def __call__(self, input: Documents) -> Embeddings:
            return list(embedder.embed(list(input)))

        @staticmethod
        def name() -> str:
            return "nams-local-shared"

        def get_config(self) -> dict[str, Any]:
            return {}

        @staticmethod
        def build_from_config(config: dict[str, Any]) -> SharedEmbedding:
            return SharedEmbedding()

    client = chromadb.PersistentClient(
        path=str(folder / "chroma"), settings=Settings(anonymized_telemetry=False)
    )
    collection = client.create_collection(
        "bench",
        embedding_function=cast(Any, SharedEmbedding()),
        metadata={"hnsw:space": "cosine"},
    )
    result = PeerResult("chroma", "Chroma PersistentClient, HNSW cosine, user metadata filter")

    def add(user_id: str, batch: Sequence[CorpusMessage]) -> None:
        collection.add(
            ids=[m.key for m in batch],
            documents=[m.content for m in batch],
            metadatas=[{"user": user_id, "role": m.role} for m in batch],
        )

    _ingest(result, corpus, MAX_BULK_MESSAGES, add, quiet)

    def search(user_id: str, question: str) -> list[str]:
        found = collection.query(query_texts=[question], n_results=TOP, where={"user": user_id})
        return list(found["ids"][0])

    _score(result, corpus, search, order, quiet)
    return result


RUNNERS = {"nams-local": run_nams, "mem0": run_mem0, "chroma": run_chroma}


# -- report ----------------------------------------------------------------------------------
def render(results: dict[str, Any]) -> str:
    w = results["workload"]
    lines = [
        f"nams-local benchmark: {NAME}",
        f"  workload   the quality set: {w['users']} users, {w['messages']} messages, "
        f"{w['questions']} questions; top {TOP} per question, scoped to the user",
        f"  embedder   {results['embedder']} for every system (query embedding included in "
        "search time)",
        "",
        f"  {'system':<11} {'ingest msg/s':>12} {'search p50':>10} {'p95':>7} {'@1':>5} "
        f"{'@5':>5} {'@10':>5}  nams-local faster (p50)",
    ]
    systems = results["systems"]
    ours = systems.get("nams-local", {})
    for name, s in systems.items():
        if "skipped" in s:
            lines.append(f"  {name:<11} not run: {s['skipped']}")
            continue
        r = s["recall"]
        speedup = "-"
        if name != "nams-local" and ours.get("search_p50_ms"):
            speedup = f"{s['search_p50_ms'] / ours['search_p50_ms']:.2f}x"
        lines.append(
            f"  {name:<11} {s['ingest_per_second']:>12.1f} {s['search_p50_ms']:>10.2f} "
            f"{s['search_p95_ms']:>7.2f} {r['@1']:>5.2f} {r['@5']:>5.2f} {r['@10']:>5.2f}  "
            f"{speedup}"
        )
    lines.append("")
    for name, s in systems.items():
        lines.append(f"  {name}: {s['detail']}")
    for name, verdict in results["verdicts"].items():
        lines.append(f"  target vs {name}: {verdict}")
    return "\n".join(lines)


def _verdicts(systems: dict[str, Any]) -> dict[str, str]:
    ours = systems.get("nams-local")
    out: dict[str, str] = {}
    if ours is None or "skipped" in ours:
        return out
    for name, s in systems.items():
        if name == "nams-local" or "skipped" in s:
            continue
        speed = s["search_p50_ms"] / ours["search_p50_ms"] if ours["search_p50_ms"] else 0.0
        ok_speed = speed >= TARGET_SPEEDUP
        ok_recall = ours["recall"]["@10"] >= s["recall"]["@10"]
        out[name] = (
            f"nams-local {speed:.2f}x faster per search (>= {TARGET_SPEEDUP:.0f}x: "
            f"{'met' if ok_speed else 'MISSED'}), recall@10 {ours['recall']['@10']:.2f} vs "
            f"{s['recall']['@10']:.2f} ({'met' if ok_recall else 'MISSED'})"
        )
    return out


def _panels(results: dict[str, Any]) -> list[BarGroup]:
    ran = {n: s for n, s in results["systems"].items() if "skipped" not in s}
    names = list(ran)
    return [
        BarGroup(
            "search latency (ms)",
            "ms",
            names,
            {pct: [ran[n][f"search_{pct}_ms"] for n in names] for pct in ("p50", "p95")},
        ),
        BarGroup(
            "evidence recall",
            "recall",
            names,
            {f"@{k}": [ran[n]["recall"][f"@{k}"] for n in names] for k in KS},
        ),
        BarGroup(
            "ingest (messages / s)",
            "msg/s",
            names,
            {"ingest": [ran[n]["ingest_per_second"] for n in names]},
        ),
    ]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"python -m benchmarks {NAME}",
        description="nams-local, mem0 and Chroma on the same ingest + search workload.",
    )
    add_synthetic_options(parser, users=20)
    run = parser.add_argument_group("systems")
    run.add_argument(
        "--systems",
        type=name_list(PEERS, "systems"),
        default=list(PEERS),
        help="default: " + ",".join(PEERS),
    )
    add_embedder_options(run)
    add_report_options(parser)
    parser.set_defaults(distractor_entities=0)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    started = machine()
    # No query cache: the set asks the same question text for many users, and a cache would
    # make nams-local's repeats free while the peers embed every time.
    embedder: BaseEmbedder = (
        HashingEmbedder(query_cache_size=0)
        if args.embedder == "hashing"
        else MiniLMEmbedder(query_cache_size=0)
    )
    embedder.embed(["warm-up: load the model before anything is timed"])
    corpus = synthetic_corpus(args)
    order = list(range(len(corpus.questions)))
    systems: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="nams-bench-peers-") as tmp:
        for name in args.systems:
            say(args, f"[{NAME}] {name}: {corpus.message_count} messages")
            folder = Path(tmp) / name
            folder.mkdir()
            try:
                result = RUNNERS[name](corpus, embedder, folder, order, args.quiet)
            except Unavailable as exc:
                result = PeerResult(name, skipped=str(exc))
                say(args, f"[{NAME}] {name} not run: {exc}")
            systems[name] = result.summary()
    results: dict[str, Any] = {
        "machine": started,
        "embedder": embedder.name,
        "workload": {
            "users": len(corpus.users),
            "messages": corpus.message_count,
            "questions": len(corpus.questions),
            "seed": args.seed,
        },
        "systems": systems,
    }
    results["verdicts"] = _verdicts(systems)
    publish(
        args,
        NAME,
        results,
        render(results),
        argv=argv,
        panels=_panels(results),
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
