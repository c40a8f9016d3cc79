"""Lower systolic.QTable (an elementwise function of a quantized tensor, as a 256-entry table).

The table (int8 entries, index `x + 128` in the flipped int8 domain) is placed as a constant of
`ceil(256 / dim)` scratchpad rows in external memory (`table_image`), LOADed into the first
spad_in rows and made the STORE unit's activation table by TABLE (docs/isa.md, "Activation
unit"). Then:

- standalone (`lower_qtable`): X is copied to Y by LOAD + COPY with `lut` (`copy_strided`, in
  the spad_in rows after the table's, so no LOAD overwrites the table before TABLE reads it);
  uint8 inputs and outputs flip their top bit on the way in and out as the other vector
  layers do;
- fused (`Activation`, given to `lower_qconv` / `lower_qmatmul`): the array layer's STOREs
  get `lut` and write the QTable's output, so the function costs no pass over memory.
"""

import dataclasses

import numpy as np

from systolic.config import ArrayConfig
from systolic.errors import ModelError, UnsupportedError
from systolic.ir import DataType, Node
from systolic.isa.instructions import Instruction, Load, LoadTarget, Table
from systolic.isa.table import TABLE_ENTRIES, table_rows
from systolic.mapper.lowering.context import LayerContext
from systolic.mapper.lowering.copy import copy_strided

__all__ = ["Activation", "activation_of", "lower_qtable", "table_code", "table_entries", "table_image"]


@dataclasses.dataclass(frozen=True)
class Activation:
    """A QTable fused into an array layer's STOREs: its 256 int8 entries, and whether its
    output is uint8 (the STOREs' `flip_sign`)."""

    table: np.ndarray
    flip_out: bool


def table_entries(node: Node, ctx: LayerContext) -> np.ndarray:
    """Return the QTable's table as 256 int64 values in -128..127; ModelError otherwise
    (UnsupportedError when it is computed: the node then runs on the host)."""
    if node.inputs[1] not in ctx.overrides and ctx.graph.initializer(node.inputs[1]) is None:
        raise UnsupportedError(f"QTable {node.label!r}: the table is computed, not a constant")
    table = np.asarray(ctx.constant(node.inputs[1])).reshape(-1)
    if table.size != TABLE_ENTRIES or table.dtype.kind not in "iu":
        raise ModelError(f"QTable {node.label!r}: the table must be {TABLE_ENTRIES} integers, "
                         f"not {table.size} of {table.dtype}")  # fmt: skip
    values = table.astype(np.int64)
    if values.min() < -128 or values.max() > 127:
        raise ModelError(f"QTable {node.label!r}: the table's entries must be int8 values")
    return values


def activation_of(node: Node, ctx: LayerContext) -> Activation:
    """Return QTable `node` as the activation of the layer producing its input."""
    flip = ctx.dtype(node.outputs[0]) == DataType.UINT8
    return Activation(table_entries(node, ctx), flip)


def table_image(table: np.ndarray, config: ArrayConfig) -> bytes:
    """Return the table as `table_rows` scratchpad rows of `dim` int8 operands (zero-padded;
    the compiler targets 8-bit operands only)."""
    rows = table_rows(config)
    padded = np.zeros(rows * config.dim, dtype=np.int8)
    padded[:TABLE_ENTRIES] = np.asarray(table).astype(np.int8)
    return padded.tobytes()  # TABLE needs 8-bit operands (input_width 8)


def table_code(address: int, config: ArrayConfig, row: int = 0) -> list[Instruction]:
    """Return LOAD of the table image at `address` into spad_in rows `row ..`, then TABLE."""
    rows = table_rows(config)
    dim = config.dim
    load = Load(LoadTarget.SPAD_IN, row, rows, address, n0=rows,
                row_stride0=dim * config.operand_bytes, length=dim, run=dim, n_mid=1)  # fmt: skip
    return [load, Table(row)]


def lower_qtable(node: Node, ctx: LayerContext) -> list[Instruction]:
    """Return the instructions of a standalone systolic.QTable node: TABLE, then LOAD + COPY
    with `lut` of every element of X into Y."""
    x_name, y_name = node.inputs[0], node.outputs[0]
    x, y = ctx.placement(x_name), ctx.placement(y_name)
    if x.shape != y.shape:
        raise ModelError(f"QTable {node.label!r}: Y is placed as {list(y.shape)}, X is "
                         f"{list(x.shape)}")  # fmt: skip
    image = table_image(table_entries(node, ctx), ctx.config)
    code = table_code(ctx.add_constant(image), ctx.config)
    code += copy_strided(
        ctx.config, x.shape, x.address, x.strides, y.address, y.strides,
        element=ctx.config.operand_bytes,
        flip_load=ctx.dtype(x_name) == DataType.UINT8,
        flip_store=ctx.dtype(y_name) == DataType.UINT8,
        lut=True,
        first_row=table_rows(ctx.config),
    )  # fmt: skip
    return code
