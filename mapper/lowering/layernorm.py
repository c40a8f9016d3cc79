"""Lower systolic.QLayerNorm (layer normalization over rows of an 8-bit tensor) to the vector
unit's LAYERNORM.

X is seen as `rows x H` (flattened from the node's `axis`): each tensor row must be H
contiguous elements in X and in Y, and the rows evenly spaced (`softmax.tensor_rows`). Blocks
of tensor rows alternate between the two halves of spad_in (a LOAD of the next block does not
wait for the previous LAYERNORM's reads): one LOAD puts row i's `C = ceil(H / dim)` chunks in
rows `i*C ..` of its half (`softmax.load_rows`, as SOFTMAX's rows: a ragged last chunk is
loaded `dim` wide, the lanes beyond H ignored, but the tensor's very last chunk exactly), and
one LAYERNORM writes the block's rows of Y. uint8 inputs and outputs flip their top bit on the
way in and out: the input's zero point becomes x_zero_point - 128 (the differences d_e do not
change), the output's zero point and bounds lose 128 as the STORE unit's do.
"""

import numpy as np

from systolic.errors import ModelError, ResourceError, UnsupportedError
from systolic.ir import DataType, Node
from systolic.isa.instructions import Instruction
from systolic.isa.layernorm import LayerNorm
from systolic.isa.memories import Memory, depth
from systolic.mapper.lowering.context import LayerContext
from systolic.mapper.lowering.node_attrs import int_attr
from systolic.mapper.lowering.softmax import load_rows, tensor_rows

__all__ = ["lower_qlayernorm"]

_FLIP = 128
_LENGTH_MAX = 0xFFFF


def lower_qlayernorm(node: Node, ctx: LayerContext) -> list[Instruction]:
    """Return the instructions of a systolic.QLayerNorm node (module docstring)."""
    config = ctx.config
    x_name, y_name = node.inputs[0], node.outputs[0]
    x, y = ctx.placement(x_name), ctx.placement(y_name)
    if x.shape != y.shape or not x.shape:
        raise ModelError(f"QLayerNorm {node.label!r}: Y is placed as {list(y.shape)}, X is "
                         f"{list(x.shape)}")  # fmt: skip
    axis = int_attr(node, "axis", -1) % len(x.shape)
    rows, length, x_stride = tensor_rows(x, axis, node.label, "QLayerNorm")
    _, _, y_stride = tensor_rows(y, axis, node.label, "QLayerNorm")
    if length > _LENGTH_MAX:
        raise UnsupportedError(f"QLayerNorm {node.label!r}: rows of {length} elements exceed "
                               f"LAYERNORM's {_LENGTH_MAX}")  # fmt: skip
    chunks = -(-length // config.dim)
    half = depth(config, Memory.SPAD_IN) // 2
    block = min(rows, half // chunks)
    if block == 0:
        raise ResourceError(f"QLayerNorm {node.label!r}: a row of {length} elements needs "
                            f"{chunks} spad_in rows, more than half of its {half * 2}; raise "
                            "spad_kib")  # fmt: skip
    flip_in = ctx.dtype(x_name) == DataType.UINT8
    flip_out = ctx.dtype(y_name) == DataType.UINT8
    shift_in, shift_out = (_FLIP if flip_in else 0), (_FLIP if flip_out else 0)
    info = np.iinfo(ctx.dtype(y_name).numpy)
    code: list[Instruction] = []
    buffer = 0
    for r0 in range(0, rows, block):
        m = min(block, rows - r0)
        spad = buffer * half
        buffer ^= 1
        code += load_rows(x.address + r0 * x_stride, x_stride, m, length, spad, config,
                          flip_in, last=r0 + m == rows)  # fmt: skip
        code.append(LayerNorm(
            in_row=spad, m=m, length=length,
            in_zero_point=int_attr(node, "x_zero_point", 0) - shift_in,
            eps=int_attr(node, "eps", 0),
            multiplier=int_attr(node, "multiplier"), shift=int_attr(node, "shift"),
            zero_point=int_attr(node, "y_zero_point", 0) - shift_out,
            lo=int_attr(node, "y_lo", int(info.min)) - shift_out,
            hi=int_attr(node, "y_hi", int(info.max)) - shift_out,
            ext=y.address + r0 * y_stride, n0=m, row_stride0=y_stride if m > 1 else 0,
            flip_sign=flip_out,
        ))  # fmt: skip
    return code
