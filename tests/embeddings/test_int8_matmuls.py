"""The default embedder runs its int8 weights as int8 products (``nams_local/int8_matmuls.py``):
the rewrite finds every weight product of the shipped model, leaves other graphs alone,
and the vectors stay within quantisation noise of the float32 ones — close enough that
a search ranks the same."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from nams_local import embeddings
from nams_local.embeddings import MiniLMEmbedder, embedder_info
from nams_local.int8_matmuls import REWRITTEN_OP, int8_matmuls

TEXTS = [
    "I moved to Berlin last spring and started at a new office.",
    "My sister Ana is a nurse in Porto.",
    "Remind me to renew the car insurance before March.",
    "We went kayaking on the lake with the kids on Saturday.",
    "The project deadline moved to Friday after the client call.",
    "I prefer green tea in the morning, coffee after lunch.",
    "Our dog Biscuit needs his vaccination next week.",
    "",
    "x",
    "Mixed CASE, punctuation!?",
    "word " * 300,
]


@pytest.fixture(scope="module")
def pair() -> tuple[MiniLMEmbedder, MiniLMEmbedder]:
    fast, exact = MiniLMEmbedder(), MiniLMEmbedder(int8_compute=False)
    fast.embed(["load"])
    exact.embed(["load"])
    return fast, exact


def test_every_weight_product_of_the_shipped_model_is_rewritten(
    pair: tuple[MiniLMEmbedder, MiniLMEmbedder],
) -> None:
    fast, exact = pair
    assert fast.model_path is not None
    data, rewritten = int8_matmuls(fast.model_path)
    model = onnx.load_from_string(data)
    ops = [node.op_type for node in model.graph.node]
    original = [node.op_type for node in onnx.load(fast.model_path).graph.node]
    # 6 layers x (q, k, v, attention output, two feed-forward) = 36 weight products; the
    # 12 attention products (activation x activation) stay float32 MatMuls.
    assert rewritten == 36 == ops.count(REWRITTEN_OP)
    assert ops.count("MatMul") == original.count("MatMul") - 36 == 12
    assert ops.count("Cast") == original.count("Cast") - 36
    assert fast.int8_matmuls == 36 and exact.int8_matmuls == 0
    assert embedder_info(fast)["compute"] == "int8"
    assert embedder_info(exact)["compute"] == "float32"


def test_vectors_stay_within_quantisation_noise_of_float32(
    pair: tuple[MiniLMEmbedder, MiniLMEmbedder],
) -> None:
    fast, exact = pair
    a, b = fast.embed(TEXTS), exact.embed(TEXTS)
    cosine = np.sum(a * b, axis=1)
    assert cosine.min() > 0.95, cosine
    assert cosine.mean() > 0.985, cosine.mean()
    # Yet they are not the float32 vectors: the int8 products really ran.
    assert cosine.max() < 0.99999


def test_a_search_ranks_the_same(pair: tuple[MiniLMEmbedder, MiniLMEmbedder]) -> None:
    fast, exact = pair
    questions = [
        "Where do I live now?",
        "What does my sister do?",
        "When is the insurance due?",
        "What did we do at the weekend?",
        "What does the dog need?",
    ]
    docs = TEXTS[:7]
    for embedder in (fast, exact):
        scores = embedder.embed(questions) @ embedder.embed(docs).T
        assert list(np.argmax(scores, axis=1)) == [0, 1, 2, 3, 6]
    ranked_fast = np.argsort(-(fast.embed(questions) @ fast.embed(docs).T), axis=1)[:, :3]
    ranked_exact = np.argsort(-(exact.embed(questions) @ exact.embed(docs).T), axis=1)[:, :3]
    assert (ranked_fast == ranked_exact).mean() >= 0.8


def _plain_matmul_model(path: Path) -> None:
    """y = x @ W with a float32 W (no int8 chain to rewrite)."""
    weight = numpy_helper.from_array(np.eye(4, dtype=np.float32) * 2, "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "plain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 4])],
        [weight],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def _int8_chain_model(path: Path, shared_scale: bool) -> None:
    """y = x @ (Cast(W_int8) * scale); with ``shared_scale`` the scale feeds a second output."""
    w = np.array([[1, -2, 3], [4, 5, -6]], dtype=np.int8)
    scale = np.array([[0.5, 0.25, 0.125]], dtype=np.float32)
    nodes = [
        helper.make_node("Cast", ["w_q"], ["w_f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["w_f", "w_scale"], ["w"]),
        helper.make_node("MatMul", ["x", "w"], ["y"]),
    ]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 3])]
    if shared_scale:
        nodes.append(helper.make_node("Identity", ["w_scale"], ["s"]))
        outputs.append(helper.make_tensor_value_info("s", TensorProto.FLOAT, [1, 3]))
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 2])],
        outputs,
        [numpy_helper.from_array(w, "w_q"), numpy_helper.from_array(scale, "w_scale")],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def test_a_graph_without_the_pattern_is_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "plain.onnx"
    _plain_matmul_model(path)
    data, rewritten = int8_matmuls(path)
    assert rewritten == 0
    assert [n.op_type for n in onnx.load_from_string(data).graph.node] == ["MatMul"]


def test_a_small_chain_is_rewritten_and_computes_the_same_product(tmp_path: Path) -> None:
    path = tmp_path / "chain.onnx"
    _int8_chain_model(path, shared_scale=False)
    data, rewritten = int8_matmuls(path)
    assert rewritten == 1
    x = np.array([[1.0, 2.0], [-3.0, 0.5]], dtype=np.float32)
    plain = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    fast = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    expected = plain.run(["y"], {"x": x})[0]
    got = fast.run(["y"], {"x": x})[0]
    # 8-bit activations: within a few percent of the largest output.
    assert np.abs(got - expected).max() <= 0.03 * np.abs(expected).max()


def test_a_scale_with_another_user_is_not_touched(tmp_path: Path) -> None:
    path = tmp_path / "shared.onnx"
    _int8_chain_model(path, shared_scale=True)
    _, rewritten = int8_matmuls(path)
    assert rewritten == 0


def test_a_failed_rewrite_costs_speed_not_the_embedder(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(path: object) -> tuple[bytes, int]:
        raise ValueError("onnx could not read it")

    monkeypatch.setattr(embeddings, "int8_matmuls", broken)
    embedder = MiniLMEmbedder()
    with caplog.at_level("WARNING", logger="nams_local.embeddings"):
        vectors = embedder.embed(["still embeds"])
    assert vectors.shape == (1, 384)
    assert embedder.int8_matmuls == 0
    assert embedder_info(embedder)["compute"] == "float32"
    assert "int8 rewrite failed" in caplog.text
