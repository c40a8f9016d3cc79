"""Post-training quantization of an Add or Mul of a computed tensor and a whole-tensor constant.

Vision transformers add a learned constant of the activation's own shape: ViT's position
embedding ([1, S, D] + [1, S, D]), LeViT's attention biases gathered into [heads, N, N] and
added to the scores [1, heads, N, N] (rank 4: see fuse_qdq.WHOLE_CONSTANT_RANK). Such a
constant is not one value per channel (`channel_affine_ptq`) nor a scalar (an activation
table), so without this rule the Add stays float on the host. Here the constant is quantized int8, symmetric per tensor (scale
max|C| / 127, as `layernorm_ptq.quantize_vector`), read through a DequantizeLinear in the
computed input's shape (leading 1s added: the same elements in the same order), and the
computed input and the result are quantized as activations, so `fuse_qdq` makes a QAdd whose
B is a constant in memory (an element-wise VECTOR_ADD of two tensors). A Mul by such a
constant (a rotary position embedding's cos/sin table [1, 1, S, D], expanded over the heads
by `expand_float_constant`) is quantized the same way and becomes a QMul (the ADD's mul mode).
"""

from collections.abc import Collection

import numpy as np

from systolic.ir import DataType, Graph, Node
from systolic.mapper.passes.fuse_qdq import WHOLE_CONSTANT_RANK
from systolic.mapper.passes.layernorm_ptq import quantize_vector

__all__ = ["constant_operand_index", "float_constant_operand", "quantized_operand"]


def constant_operand_index(node: Node, graph: Graph,
                           constants: dict[str, np.ndarray],
                           op_types: Collection[str] = ("Add", "Mul")) -> int | None:
    """Return the input index of the whole-tensor constant of an Add or Mul `node` (module
    docstring; other `op_types`: `sub_constant` asks about a Sub): a finite float32 constant
    of more than one element whose shape, with leading 1s added, is the other (computed,
    float, static) input's shape and the result's, of rank at most
    fuse_qdq.WHOLE_CONSTANT_RANK. None when `node` is no such op."""
    found = float_constant_operand(node, graph, constants, op_types)
    if found is None:
        return None
    index, c, dims = found
    if not all(isinstance(d, int) for d in dims):
        return None
    shape = tuple(int(d) for d in dims if isinstance(d, int))
    if (c.dtype != np.float32 or c.size <= 1 or c.ndim > len(shape)
            or len(shape) > WHOLE_CONSTANT_RANK
            or (1,) * (len(shape) - c.ndim) + c.shape != shape or not np.all(np.isfinite(c))):
        return None
    return index


def float_constant_operand(
    node: Node, graph: Graph, constants: dict[str, np.ndarray], op_types: Collection[str]
) -> tuple[int, np.ndarray, tuple[int | str | None, ...]] | None:
    """Return (input index, value, the other input's shape) of the constant operand of a
    binary ai.onnx `node` of `op_types` whose other input is computed and float, as its
    result is, of the same known shape; None when `node` is no such op. (What
    `constant_operand_index` and `channel_affine_ptq.channel_vector_index` check first.)"""
    if (node.op_type not in op_types or node.domain != "" or len(node.inputs) != 2
            or len(node.outputs) != 1):
        return None
    index = 1 if node.inputs[1] in constants else 0
    x, c = node.inputs[1 - index], constants.get(node.inputs[index])
    x_type, y_type = graph.type_of(x), graph.type_of(node.outputs[0])
    if (c is None or x in constants or x_type is None or y_type is None
            or x_type.dtype != DataType.FLOAT or y_type.dtype != DataType.FLOAT
            or x_type.shape is None or y_type.shape != x_type.shape):
        return None
    return index, c, tuple(x_type.shape)


def quantized_operand(constant: np.ndarray, shape: tuple[int, ...]
                      ) -> tuple[np.ndarray, np.float32]:
    """Return (int8 values in `shape`, float32 scale) of a whole-tensor constant."""
    q, scale = quantize_vector(constant.reshape(-1))
    return q.reshape(shape), scale
