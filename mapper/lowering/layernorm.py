"""Lower systolic.QLayerNorm (layer normalization over rows of an 8-bit tensor) to the vector
unit's LAYERNORM.

X and Y are lowered as `row_operands` lowers every row-wise node (rows of H contiguous,
evenly spaced elements; blocks of rows alternating between the two halves of spad_in; one
LAYERNORM per block), with the input's zero point and eps besides. uint8 inputs flip their top
bit on the way in: the input's zero point becomes x_zero_point - 128 (the differences d_e do
not change).
"""

from systolic.ir import Node
from systolic.isa.instructions import Instruction
from systolic.isa.layernorm import LayerNorm
from systolic.mapper.lowering.context import LayerContext
from systolic.mapper.lowering.node_attrs import int_attr
from systolic.mapper.lowering.row_operands import FLIP, lower_row_blocks, row_operands

__all__ = ["lower_qlayernorm"]


def lower_qlayernorm(node: Node, ctx: LayerContext) -> list[Instruction]:
    """Return the instructions of a systolic.QLayerNorm node (module docstring)."""
    ops = row_operands(node, ctx, LayerNorm.MNEMONIC, first=0, room="its {}")
    shift_in = FLIP if ops.flip_in else 0
    fields = {"in_zero_point": int_attr(node, "x_zero_point", 0) - shift_in,
              "eps": int_attr(node, "eps", 0)}
    return lower_row_blocks(node, ctx, ops, LayerNorm, fields)
