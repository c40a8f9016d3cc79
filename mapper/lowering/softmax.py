"""Lower systolic.QSoftmax (softmax over rows of an 8-bit tensor) to the vector unit's SOFTMAX.

The exp table (256 uint16 entries) is placed as a constant of `ceil(512 / dim)` scratchpad
rows (`exp_table_image`: 512 little-endian bytes, zero-padded), LOADed into the first spad_in
rows and made the STORE unit's exp table by TABLE with `wide` (docs/isa.md, "SOFTMAX and the
exp table"). X and Y are then lowered as `row_operands` lowers every row-wise node, with the
blocks of tensor rows in the spad_in rows after the table's (so no LOAD overwrites the table
before TABLE reads it). uint8 inputs and outputs flip their top bit on the way in and out (the
distances below a row's maximum do not change).
"""

import numpy as np

from systolic.config import ArrayConfig
from systolic.errors import ModelError, UnsupportedError
from systolic.ir import Node
from systolic.isa.instructions import Instruction, Load, LoadTarget, Softmax, Table
from systolic.isa.table import EXP_TABLE_BYTES, exp_table_rows
from systolic.mapper.lowering.context import LayerContext
from systolic.mapper.lowering.row_operands import lower_row_blocks, row_operands

__all__ = ["exp_table_code", "exp_table_image", "lower_qsoftmax"]

_ENTRIES = EXP_TABLE_BYTES // 2


def exp_table_image(table: np.ndarray, config: ArrayConfig) -> bytes:
    """Return the exp table as `exp_table_rows` scratchpad rows of `dim` bytes: entry e's
    little-endian bytes at operands 2e and 2e + 1, zero-padded (8-bit operands only)."""
    padded = np.zeros(exp_table_rows(config) * config.dim, dtype=np.uint8)
    padded[:EXP_TABLE_BYTES] = np.frombuffer(np.asarray(table).astype("<u2").tobytes(), np.uint8)
    return padded.tobytes()


def exp_table_code(address: int, config: ArrayConfig, row: int = 0) -> list[Instruction]:
    """Return LOAD of the exp table image at `address` into spad_in rows `row ..`, then TABLE
    with `wide`."""
    rows, dim = exp_table_rows(config), config.dim
    load = Load(LoadTarget.SPAD_IN, row, rows, address, n0=rows, row_stride0=dim,
                length=dim, run=dim, n_mid=1)  # fmt: skip
    return [load, Table(row, wide=True)]


def _exp_entries(node: Node, ctx: LayerContext) -> np.ndarray:
    name = node.inputs[1]
    if name not in ctx.overrides and ctx.graph.initializer(name) is None:
        raise UnsupportedError(f"QSoftmax {node.label!r}: the exp table is computed, not a "
                               "constant")  # fmt: skip
    table = np.asarray(ctx.constant(name)).reshape(-1)
    if table.size != _ENTRIES or table.dtype.kind not in "iu" or (
            table.size and (table.min() < 0 or table.max() > 0xFFFF)):  # fmt: skip
        raise ModelError(f"QSoftmax {node.label!r}: the exp table must be {_ENTRIES} uint16 "
                         "values")  # fmt: skip
    return table


def lower_qsoftmax(node: Node, ctx: LayerContext) -> list[Instruction]:
    """Return the instructions of a systolic.QSoftmax node (module docstring)."""
    ops = row_operands(node, ctx, Softmax.MNEMONIC, first=exp_table_rows(ctx.config),
                       room="the {} left after the exp table")
    image = exp_table_image(_exp_entries(node, ctx), ctx.config)
    code = exp_table_code(ctx.add_constant(image), ctx.config)
    return code + lower_row_blocks(node, ctx, ops, Softmax)
