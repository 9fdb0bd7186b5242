"""What the store's model runs embedded, for whom, and what each run cost.

On a small server the embedder is most of a request's CPU, and "how many texts does one
added message cost" is the question that decides throughput: the model's price per text
hardly moves with batch size on two busy cores, so every text embedded twice, or embedded
at all when its vector is already known, is CPU taken from the requests. The batcher
(``embedding_batcher``) records here every ``embed`` call by its caller (message vectors,
passages, entity vectors, search queries, API calls) and every model run: its thread,
its texts by caller, its forward passes, real and padded tokens (``ModelCounts`` from
the embedder) and its CPU on the model thread. The counters are a few integer additions
per run, always on; tests and benchmarks read ``EmbeddingStats.snapshot``.

``NAMS_EMBED_TRACE=/path`` additionally appends one JSON line per run to that file (for
profiling a ``serve`` process from outside, as ``NAMS_WRITER_TRACE`` does for the
writer). Off by default; a trace that cannot be written is dropped with one warning and
never fails an embedding.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from nams_local.embeddings import ModelCounts

from .json_trace import JsonTrace

__all__ = [
    "API",
    "ENTITIES",
    "MESSAGES",
    "PASSAGES",
    "QUERIES",
    "TRACE_ENV",
    "CallerStats",
    "EmbeddingStats",
    "RunStats",
]

#: The environment variable naming a file to append one JSON line per model run to.
TRACE_ENV = "NAMS_EMBED_TRACE"

#: Callers of the store's embedder (an unnamed caller is ``other@<thread name>``).
MESSAGES = "messages"
PASSAGES = "passages"
ENTITIES = "entities"
QUERIES = "queries"
API = "api"

RunThread = Literal["bulk", "query"]


@dataclass
class CallerStats:
    """``embed`` calls of one caller: how many, their texts and characters, and the texts
    among them answered without the model (``text_vectors``: embedded before, or twice in
    one call)."""

    calls: int = 0
    texts: int = 0
    chars: int = 0
    cached: int = 0


@dataclass
class RunStats:
    """Model runs of one thread: how many, their texts, the queries among them, forward
    passes, real and padded tokens, wall and CPU seconds (the CPU of the model thread;
    onnxruntime's own pool threads, with ``intra_op_num_threads`` > 1, are not in it)."""

    runs: int = 0
    texts: int = 0
    queries: int = 0
    passes: int = 0
    tokens: int = 0
    padded: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0


@dataclass
class EmbeddingStats:
    """The counters of one store's batcher (written by its threads, read from any)."""

    callers: dict[str, CallerStats] = field(default_factory=dict)
    threads: dict[str, RunStats] = field(default_factory=dict)
    _trace: JsonTrace | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def from_environment(cls) -> EmbeddingStats:
        return cls(_trace=JsonTrace(TRACE_ENV))

    def record_call(self, caller: str, texts: int, chars: int, cached: int = 0) -> None:
        with self._lock:
            stats = self.callers.setdefault(caller, CallerStats())
            stats.calls += 1
            stats.texts += texts
            stats.chars += chars
            stats.cached += cached

    def record_run(
        self,
        thread: RunThread,
        by_caller: Mapping[str, int],
        counts: ModelCounts,
        seconds: float,
        cpu_seconds: float,
    ) -> None:
        """One model run: its texts by caller, what the model did, its wall and CPU time."""
        texts = sum(by_caller.values())
        with self._lock:
            stats = self.threads.setdefault(thread, RunStats())
            stats.runs += 1
            stats.texts += texts
            stats.queries += by_caller.get(QUERIES, 0)
            stats.passes += counts.passes
            stats.tokens += counts.tokens
            stats.padded += counts.padded
            stats.seconds += seconds
            stats.cpu_seconds += cpu_seconds
        if self._trace is not None and self._trace.on:
            self._trace.write(
                {
                    "at": round(time.time(), 3),
                    "thread": thread,
                    "texts": texts,
                    "callers": dict(by_caller),
                    "passes": counts.passes,
                    "tokens": counts.tokens,
                    "padded": counts.padded,
                    "ms": round(seconds * 1000, 3),
                    "cpu_ms": round(cpu_seconds * 1000, 3),
                }
            )

    def snapshot(self) -> dict[str, Any]:
        """The counters as plain data: ``{"callers": {...}, "threads": {...}}``."""
        with self._lock:
            return {
                "callers": {name: asdict(c) for name, c in self.callers.items()},
                "threads": {name: asdict(r) for name, r in self.threads.items()},
            }

    def texts(self, caller: str) -> int:
        """Texts ``caller`` asked to embed so far."""
        with self._lock:
            found = self.callers.get(caller)
            return found.texts if found else 0

    def embedded(self, caller: str) -> int:
        """Texts of ``caller`` the model ran on so far (asked, less those cached)."""
        with self._lock:
            found = self.callers.get(caller)
            return found.texts - found.cached if found else 0

    def model_texts(self) -> int:
        """Texts in every model run so far."""
        with self._lock:
            return sum(stats.texts for stats in self.threads.values())

    def close(self) -> None:
        """End the trace, with the counters as its last line (``{"totals": ...}``)."""
        trace, self._trace = self._trace, None
        if trace is not None:
            trace.write({"totals": self.snapshot()})
            trace.close()
