"""The optional reranker hook: a local cross-encoder rescoring retrieval's hits.

Why: a bi-encoder embeds the question and each memory apart, so "When is my birthday?"
and "It is Dev's birthday on Monday" look alike to it; a cross-encoder reads the pair
together and can tell them apart. No such model ships on the package registries this
project may use, so the hook is off by default and loads only what is already on disk:

- :class:`OnnxCrossEncoderReranker`: a directory holding ``model.onnx`` (a sequence
  classifier exported to ONNX, e.g. an ms-marco MiniLM cross-encoder) and its
  ``tokenizer.json``, run on onnxruntime with the Rust ``tokenizers`` package, like the
  default embedder: no torch.
- :class:`CrossEncoderReranker`: a sentence-transformers ``CrossEncoder`` from a local
  directory or the local Hugging Face cache (``local_files_only``; the optional
  ``sentence-transformers`` extra). Nothing is ever downloaded.

``reranker_from_path`` picks between them. Retrieval (``RetrievalOptions.reranker``) asks
the reranker for a relevance in [0, 1] per (question, hit) pair: hits are reordered by it
and those below ``RetrievalOptions.rerank_floor`` dropped. Its scores compare across
questions by construction (a per-pair probability), so the hook works on every backend,
hosted NAMS included. A failing reranker costs a warning, and the hits keep their
search scores (fail safe).
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import math
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "DEFAULT_RERANK_FLOOR",
    "MAX_RERANK_TOKENS",
    "CrossEncoderReranker",
    "OnnxCrossEncoderReranker",
    "Reranker",
    "RerankerUnavailableError",
    "rerank_scores",
    "reranker_from_path",
]

#: With a reranker, hits it scores below this are dropped: its scores are probabilities
#: that the pair is relevant, so 0.5 is the point where it says "more likely than not".
DEFAULT_RERANK_FLOOR = 0.5
#: Tokens of one (question, memory) pair, as cross-encoders are usually trained.
MAX_RERANK_TOKENS = 512


class RerankerUnavailableError(RuntimeError):
    """The reranker cannot run here: a missing package or model file (said how to fix)."""


@runtime_checkable
class Reranker(Protocol):
    """Scores how well each text answers ``query``: one relevance in [0, 1] per text.

    Called from a worker thread (it is CPU work); implementations must be thread-safe.
    """

    @property
    def name(self) -> str: ...

    def score(self, query: str, texts: Sequence[str]) -> list[float]: ...


async def rerank_scores(reranker: Reranker, query: str, texts: Sequence[str]) -> list[float]:
    """``reranker``'s scores for ``texts``, off the event loop, checked: one finite number
    per text, clipped to [0, 1] (a reranker answering garbage raises ``ValueError``)."""
    if not texts:
        return []
    found = await asyncio.to_thread(reranker.score, query, list(texts))
    if len(found) != len(texts):
        raise ValueError(f"reranker {reranker.name!r} gave {len(found)} scores for {len(texts)}")
    out: list[float] = []
    for value in found:
        number = float(value)
        if not math.isfinite(number):
            raise ValueError(f"reranker {reranker.name!r} gave a non-finite score")
        out.append(min(1.0, max(0.0, number)))
    return out


def reranker_from_path(path: str | os.PathLike[str]) -> Reranker:
    """The reranker for a model on disk: ONNX when the directory holds ``model.onnx``,
    else a sentence-transformers ``CrossEncoder`` (local files only)."""
    folder = Path(path)
    if (folder / "model.onnx").is_file():
        return OnnxCrossEncoderReranker(folder)
    return CrossEncoderReranker(path)


def _sigmoid(values: NDArray[np.float32]) -> NDArray[np.float64]:
    return 1.0 / (1.0 + np.exp(-values.astype(np.float64)))


class OnnxCrossEncoderReranker:
    """A cross-encoder exported to ONNX: ``model.onnx`` and ``tokenizer.json`` in a folder.

    The model takes ``input_ids`` and ``attention_mask`` (and ``token_type_ids`` when it
    declares them) and returns logits of shape (batch, 1) — scored through a sigmoid — or
    (batch, 2) — the softmax of the second, "relevant", column. Loaded on first use.
    """

    def __init__(self, folder: str | os.PathLike[str], *, batch_size: int = 16) -> None:
        self._folder = Path(folder)
        for needed in ("model.onnx", "tokenizer.json"):
            if not (self._folder / needed).is_file():
                raise RerankerUnavailableError(
                    f"{self._folder} has no {needed}: an ONNX cross-encoder folder holds "
                    "model.onnx and tokenizer.json (nothing is downloaded)"
                )
        self._batch_size = max(1, batch_size)
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: set[str] = set()
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return f"onnx:{self._folder.name}"

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None:
                import onnxruntime as ort
                from tokenizers import Tokenizer

                tokenizer = Tokenizer.from_file(str(self._folder / "tokenizer.json"))
                tokenizer.enable_truncation(MAX_RERANK_TOKENS)
                tokenizer.enable_padding()
                options = ort.SessionOptions()
                options.log_severity_level = 3
                session = ort.InferenceSession(
                    str(self._folder / "model.onnx"), options, providers=["CPUExecutionProvider"]
                )
                self._inputs = {i.name for i in session.get_inputs()}
                self._session, self._tokenizer = session, tokenizer
            return self._session, self._tokenizer

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        session, tokenizer = self._load()
        out: list[float] = []
        for start in range(0, len(texts), self._batch_size):
            batch = texts[start : start + self._batch_size]
            encodings = tokenizer.encode_batch([(query, t) for t in batch])
            feed: dict[str, NDArray[np.int64]] = {
                "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            }
            if "token_type_ids" in self._inputs:
                feed["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
            logits = np.asarray(session.run(None, feed)[0], dtype=np.float32)
            if logits.ndim == 1:
                logits = logits[:, None]
            if logits.shape[1] == 1:
                probabilities = _sigmoid(logits[:, 0])
            else:
                shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
                probabilities = shifted[:, -1] / shifted.sum(axis=1)
            out.extend(float(p) for p in probabilities)
        return out


class CrossEncoderReranker:
    """A sentence-transformers ``CrossEncoder`` already on disk (optional extra).

    ``model_name_or_path`` is a local directory, or a model name already in the Hugging
    Face cache; it is loaded with ``local_files_only=True`` on first use, never downloaded.
    """

    def __init__(self, model_name_or_path: str | os.PathLike[str], *, device: str | None = None):
        if importlib.util.find_spec("sentence_transformers") is None:
            raise RerankerUnavailableError(
                "CrossEncoderReranker needs the optional 'sentence-transformers' package, "
                "which is not installed. Install it with: "
                "pip install 'nams-local[sentence-transformers]'"
            )
        self._model_name = os.fspath(model_name_or_path)
        self._device = device
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._model_name

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                from sentence_transformers import CrossEncoder

                kwargs: dict[str, Any] = {"device": self._device}
                if "local_files_only" in inspect.signature(CrossEncoder.__init__).parameters:
                    kwargs["local_files_only"] = True
                elif not Path(self._model_name).is_dir():
                    raise RerankerUnavailableError(
                        f"{self._model_name!r} is not a local directory, and this "
                        "sentence-transformers version cannot be told not to download"
                    )
                try:
                    self._model = CrossEncoder(self._model_name, **kwargs)
                except Exception as exc:
                    raise RerankerUnavailableError(
                        f"Could not load cross-encoder {self._model_name!r} from local files "
                        f"(nothing is downloaded): {exc}"
                    ) from exc
            return self._model

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        # A one-label CrossEncoder applies its sigmoid itself: these are probabilities.
        found = self._load().predict([(query, t) for t in texts], show_progress_bar=False)
        return [
            float(v) for v in np.asarray(found, dtype=np.float64).reshape(len(texts), -1)[:, -1]
        ]
