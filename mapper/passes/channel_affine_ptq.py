"""What post-training quantization quantizes around a per-channel affine op, so that
`fuse_qdq` makes it a QMul or a QAdd with a per-channel B (`channel_affine`'s Mul(x, s) and
Add(t) of [1, C, 1, 1] constants: pre-activation batch norm).

A Mul or Add (ai.onnx) of a float activation x [N, C, H, W] or [N, C, T] (stored
channel-last, or row-major with one value per row: the vector unit broadcasts B per channel)
and a float32 constant [1, C, 1, 1] or [1, C, 1] (x's rank) of more than one element, finite,
whose result is float: x and the
result are quantized (calibrated like any activation; a Relu or Clip that is the result's
only reader is absorbed), and the constant is read through a DequantizeLinear of its int8
per-tensor quantization (`layernorm_ptq.quantize_vector`), keeping its shape [1, C, 1, ...]
(the per-channel form `fuse_qdq` and the QMul/QAdd lowerings take). Likewise for x [M, C]
(rank 2, `channel_affine`'s BatchNorm1d) and a float32 constant [C]: flattened, it is a vector
along x's last axis (QMul and QAdd as for LayerNorm's gamma and beta); so for x [N, S, C] and
for x [N, S, H, D] with a constant [D] (a per-head norm's gamma: Qwen3's and Gemma3's q_norm
and k_norm).

In a quantized model (QDQ: a batch norm left float between DequantizeLinear and
QuantizeLinear, which `channel_affine` made a Mul and an Add), `channel_island` names those
nodes for `quantize_float`'s `region`: the values they read from a DequantizeLinear are
quantized already, a result a QuantizeLinear reads takes that node's parameters, and the
product between them is calibrated (a value a QuantizeLinear alone reads is not quantized
again: `quantized_by_model`).
"""

from collections.abc import Collection, Mapping

import numpy as np

from systolic.ir import Graph, Node
from systolic.mapper.passes.constant_operand_ptq import float_constant_operand
from systolic.mapper.passes.graph_tools import constants_of
from systolic.mapper.passes.quant_params import is_activation
from systolic.reference.ops.op_systolic_qmul import per_channel_broadcast

__all__ = ["channel_island", "channel_vector_index", "keeps_shape", "quantized_by_model"]


def channel_vector_index(node: Node, graph: Graph,
                         constants: dict[str, np.ndarray]) -> int | None:  # fmt: skip
    """Return the input index of the per-channel constant of a Mul/Add `node` as the module
    docstring describes, or None when `node` is no such op."""
    found = float_constant_operand(node, graph, constants, ("Mul", "Add"))
    if found is None or len(found[2]) not in (2, 3, 4):
        return None
    index, c, shape = found
    if len(shape) == 2 or (len(shape) in (3, 4) and not keeps_shape(c)
                           and (len(shape) == 3 or _last_axis_vector(c, shape[-1]))):
        # [M, C], [N, S, C], [N, S, H, D]: a vector along the last axis
        return (index if _last_axis_vector(c, shape[-1])
                and not _product_bias(node, node.inputs[1 - index], graph) else None)
    if (c.dtype != np.float32 or c.ndim != len(shape) or c.shape[0] != 1 or c.size <= 1
            or not all(isinstance(d, int) for d in shape)
            or not per_channel_broadcast([int(d) for d in shape if isinstance(d, int)], c.shape)
            or not np.all(np.isfinite(c))):
        return None
    return index


def _last_axis_vector(constant: np.ndarray, size: object) -> bool:
    """True for a finite float32 constant of `size` > 1 values along the last axis: [C],
    [1, C], [1, 1, C] or [1, 1, 1, C] (channel_affine's BatchNorm1d, a token's per-feature
    scale or shift: MobileBERT's NoNorm, a transformer's layer scale; ConvNeXtV2's GRN gamma
    and beta on its channel-last [N, H, W, C])."""
    return (constant.dtype == np.float32 and 1 <= constant.ndim <= 4 and constant.size > 1
            and constant.shape[-1] == size and constant.size == size
            and bool(np.all(np.isfinite(constant))))


def _product_bias(node: Node, x: str, graph: Graph) -> bool:
    """True when `node` is an Add and the only reader of `x`, the result of a MatMul: the
    product's bias, which quantize_float fuses into the product (its output stage)."""
    if node.op_type != "Add" or any(info.name == x for info in graph.outputs):
        return False
    made_by_matmul, readers = False, 0
    for other in graph.nodes:
        readers += other.inputs.count(x)
        made_by_matmul |= (x in other.outputs and other.op_type == "MatMul"
                           and other.domain == "")
    return made_by_matmul and readers == 1


def keeps_shape(constant: np.ndarray) -> bool:
    """True for a per-channel constant [1, C, 1, 1] or [1, C, 1] (C > 1) whose quantization
    keeps that shape (a layer normalization's vector is flattened to [H] instead)."""
    return (constant.ndim in (3, 4) and constant.shape[0] == 1 and constant.shape[1] > 1
            and all(d == 1 for d in constant.shape[2:]))


def channel_island(graph: Graph) -> frozenset[str]:
    """Return the names of the float per-channel Mul/Add nodes of `graph`
    (`channel_vector_index`) and of a Relu or Clip that alone reads one's result: the region
    `quantize_float` quantizes in a quantized model. Empty for a dynamically quantized model:
    its float part is `dynamic_island`'s, which keeps a product's per-channel bias on the host
    with the product's run-time scaling."""
    if any(node.op_type == "DynamicQuantizeLinear" and node.domain == ""
           for node in graph.nodes):
        return frozenset()
    constants = constants_of(graph)
    consumers = graph.consumers()
    names: set[str] = set()
    for node in graph.nodes:
        if channel_vector_index(node, graph, constants) is None:
            continue
        names.add(node.name)
        readers = consumers.get(node.outputs[0], [])
        if len(readers) == 1 and is_activation(readers[0], constants):
            names.add(readers[0].name)
    return frozenset(names)


def quantized_by_model(value: str, consumers: Mapping[str, list[Node]],
                       outputs: Collection[str]) -> bool:  # fmt: skip
    """True when `value`'s only reader is a QuantizeLinear (a quantized model's own) and it
    is no graph output."""
    readers = consumers.get(value, [])
    return (len(readers) == 1 and readers[0].op_type == "QuantizeLinear"
            and readers[0].domain == "" and value not in outputs)
