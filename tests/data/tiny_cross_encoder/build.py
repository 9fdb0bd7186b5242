"""Builds the tiny ONNX cross-encoder the reranker tests load (``model.onnx`` and
``tokenizer.json`` beside this file).

Why a hand-built model: no cross-encoder weights ship on the package registries this
project may use, and tests never download. This one is a real ONNX sequence classifier
with a real tokenizer (the same inputs and outputs as an exported ms-marco MiniLM): it
counts the words of a small vocabulary that the question and the memory share, and its
logit is ``2 * shared - 1`` (one shared word: sigmoid 0.73; none: 0.27). Not a good
reranker — a deterministic, inspectable one, so the tests can say what it must answer.

Run with ``onnx`` and ``tokenizers`` installed (``pip install onnx tokenizers``; neither
``onnx`` nor this script is needed at test time): ``python tests/data/tiny_cross_encoder/build.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

HERE = Path(__file__).parent
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
#: The words the model counts (everything else is [UNK], which counts nothing).
WORDS = sorted(
    {
        *["porto", "flat", "city", "live", "lives", "living", "moved", "move", "spring", "trams"],
        *[
            "birthday",
            "sister",
            "brother",
            "dog",
            "name",
            "called",
            "cello",
            "piano",
            "instrument",
            "play",
        ],
        *["allergic", "peanuts", "car", "drive", "bangalore", "boss", "manager", "company", "work"],
    }
)


def tokenizer() -> Tokenizer:
    vocab = {w: i for i, w in enumerate([*SPECIAL, *WORDS])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tok.enable_padding(pad_id=vocab["[PAD]"], pad_token="[PAD]")
    return tok


def model(size: int) -> onnx.ModelProto:
    table = np.eye(size, dtype=np.float32)
    table[: len(SPECIAL)] = 0.0  # special tokens and [UNK] count nothing
    ints = [("input_ids", ["batch", "seq"]), ("attention_mask", ["batch", "seq"])]
    ints.append(("token_type_ids", ["batch", "seq"]))
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, s) for n, s in ints]
    output = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])
    init = [
        numpy_helper.from_array(table, "table"),
        numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1"),
        numpy_helper.from_array(np.array([2], dtype=np.int64), "axis2"),
        numpy_helper.from_array(np.array(1.0, dtype=np.float32), "one"),
        numpy_helper.from_array(np.array(2.0, dtype=np.float32), "two"),
    ]
    node = helper.make_node
    nodes = [
        node("Gather", ["table", "input_ids"], ["onehot"]),
        node("Cast", ["attention_mask"], ["mask"], to=TensorProto.FLOAT),
        node("Cast", ["token_type_ids"], ["second"], to=TensorProto.FLOAT),
        node("Sub", ["one", "second"], ["first"]),
        node("Mul", ["mask", "first"], ["wq"]),
        node("Mul", ["mask", "second"], ["wt"]),
        node("Unsqueeze", ["wq", "axis2"], ["wq3"]),
        node("Unsqueeze", ["wt", "axis2"], ["wt3"]),
        node("Mul", ["onehot", "wq3"], ["xq"]),
        node("Mul", ["onehot", "wt3"], ["xt"]),
        node("ReduceSum", ["xq", "axis1"], ["q"], keepdims=0),
        node("ReduceSum", ["xt", "axis1"], ["t"], keepdims=0),
        node("Min", ["q", "t"], ["both"]),
        node("ReduceSum", ["both", "axis1"], ["shared"], keepdims=1),
        node("Mul", ["shared", "two"], ["twice"]),
        node("Sub", ["twice", "one"], ["logits"]),
    ]
    graph = helper.make_graph(nodes, "tiny_cross_encoder", inputs, [output], init)
    built = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    built.ir_version = 8
    onnx.checker.check_model(built)
    return built


def main() -> None:
    tok = tokenizer()
    tok.save(str(HERE / "tokenizer.json"))
    onnx.save(model(tok.get_vocab_size()), str(HERE / "model.onnx"))


if __name__ == "__main__":
    main()
