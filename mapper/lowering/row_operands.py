"""Lower a row-wise vector-unit node (systolic.QSoftmax, systolic.QLayerNorm): X and Y seen as
`rows x L`, blocks of rows LOADed into spad_in and one row instruction per block.

X is flattened from the node's `axis` on: each tensor row must be L contiguous elements in X
and in Y, and the rows evenly spaced (`tensor_rows`). Blocks of tensor rows alternate between
the two halves of the spad_in rows from `first` on (a LOAD of the next block does not wait for
the previous instruction's reads): one LOAD puts row i's `C = ceil(L / dim)` chunks in rows
`i*C ..` of its half (`load_rows`: a ragged last chunk is loaded `dim` wide, the lanes beyond L
ignored, but the tensor's very last chunk exactly), and one instruction of the node's
`RowInstruction` class writes the block's rows of Y. uint8 inputs and outputs flip their top
bit on the way in and out: the output's zero point and bounds lose 128 as the STORE unit's do.
"""

import dataclasses
import math
from collections.abc import Mapping

import numpy as np

from systolic.config import ArrayConfig
from systolic.errors import ModelError, ResourceError, UnsupportedError
from systolic.ir import DataType, Node
from systolic.isa.instructions import Instruction, Load, LoadTarget
from systolic.isa.memories import Memory, depth
from systolic.isa.program import TensorPlacement
from systolic.isa.row_instruction import RowInstruction, row_chunks
from systolic.mapper.lowering.context import LayerContext
from systolic.mapper.lowering.node_attrs import int_attr

__all__ = ["FLIP", "RowOperands", "load_rows", "lower_row_blocks", "row_operands", "tensor_rows"]

FLIP = 128
"""What flipping the top bit of a uint8 value subtracts from it (as int8)."""
_LENGTH_MAX = 0xFFFF


@dataclasses.dataclass(frozen=True)
class RowOperands:
    """X and Y of a row-wise node as `rows` tensor rows of `length` elements, `x_stride` and
    `y_stride` bytes apart (`flip_in` / `flip_out` when X / Y are uint8), lowered in blocks of
    at most `block` rows that alternate between spad_in rows `first ..` and `first + half ..`."""

    x: TensorPlacement
    y: TensorPlacement
    rows: int
    length: int
    x_stride: int
    y_stride: int
    flip_in: bool
    flip_out: bool
    first: int
    half: int
    block: int


def tensor_rows(place: TensorPlacement, axis: int, label: str,
                op: str) -> tuple[int, int, int]:  # fmt: skip
    """Return (rows, L, row stride in bytes) of `place` flattened from `axis` on; raise
    UnsupportedError (naming `op` `label`) unless each row's L elements are contiguous and
    the rows evenly spaced."""
    shape, strides = place.shape, place.strides
    element = place.dtype.numpy.itemsize
    length = math.prod(shape[axis:])
    step = element
    for extent, stride in zip(reversed(shape[axis:]), reversed(strides[axis:]), strict=True):
        if extent > 1 and stride != step:
            raise UnsupportedError(f"{op} {label!r}: the rows of {place.name!r} are not "
                                   "contiguous in memory (the vector unit reads and writes "
                                   "contiguous rows)")  # fmt: skip
        step *= extent
    rows = math.prod(shape[:axis])
    grid = np.zeros((), np.int64)
    for extent, stride in zip(shape[:axis], strides[:axis], strict=True):
        grid = (grid[..., None] + np.arange(extent, dtype=np.int64) * stride)
    offsets = grid.reshape(-1)
    row_stride = int(offsets[1] - offsets[0]) if rows > 1 else length * element
    if rows > 1 and not np.array_equal(offsets, offsets[0] + row_stride * np.arange(rows)):
        raise UnsupportedError(f"{op} {label!r}: the rows of {place.name!r} are not evenly "
                               "spaced in memory")  # fmt: skip
    return rows, length, row_stride


def row_operands(node: Node, ctx: LayerContext, mnemonic: str, *, first: int,
                 room: str) -> RowOperands:  # fmt: skip
    """Return the rows of `node`'s X and Y and their blocks in the spad_in rows from `first`
    on; raise ModelError unless Y is placed as X, UnsupportedError unless both are rows
    `tensor_rows` accepts of at most 65535 elements (the most `mnemonic`'s length field holds),
    ResourceError (`room` formatted with the rows left, e.g. "its {}") when one tensor row needs
    more than half of the rows from `first` on."""
    x_name, y_name = node.inputs[0], node.outputs[0]
    x, y = ctx.placement(x_name), ctx.placement(y_name)
    if x.shape != y.shape or not x.shape:
        raise ModelError(f"{node.op_type} {node.label!r}: Y is placed as {list(y.shape)}, X is "
                         f"{list(x.shape)}")  # fmt: skip
    axis = int_attr(node, "axis", -1) % len(x.shape)
    rows, length, x_stride = tensor_rows(x, axis, node.label, node.op_type)
    _, _, y_stride = tensor_rows(y, axis, node.label, node.op_type)
    if length > _LENGTH_MAX:
        raise UnsupportedError(f"{node.op_type} {node.label!r}: rows of {length} elements "
                               f"exceed {mnemonic}'s {_LENGTH_MAX}")  # fmt: skip
    chunks = row_chunks(length, ctx.config)
    half = (depth(ctx.config, Memory.SPAD_IN) - first) // 2
    block = min(rows, half // chunks)
    if block == 0:
        raise ResourceError(f"{node.op_type} {node.label!r}: a row of {length} elements needs "
                            f"{chunks} spad_in rows, more than half of {room.format(half * 2)}; "
                            "raise spad_kib")  # fmt: skip
    return RowOperands(x, y, rows, length, x_stride, y_stride,
                       flip_in=ctx.dtype(x_name) == DataType.UINT8,
                       flip_out=ctx.dtype(y_name) == DataType.UINT8,
                       first=first, half=half, block=block)  # fmt: skip


def _requantization(node: Node, ctx: LayerContext, flip_out: bool) -> dict[str, int]:
    """Return the multiplier, shift and Y's zero point and clamp bounds (int8 after a flip)."""
    shift_out = FLIP if flip_out else 0
    info = np.iinfo(ctx.dtype(node.outputs[0]).numpy)
    return {
        "multiplier": int_attr(node, "multiplier"), "shift": int_attr(node, "shift"),
        "zero_point": int_attr(node, "y_zero_point", 0) - shift_out,
        "lo": int_attr(node, "y_lo", int(info.min)) - shift_out,
        "hi": int_attr(node, "y_hi", int(info.max)) - shift_out,
    }  # fmt: skip


def lower_row_blocks(node: Node, ctx: LayerContext, ops: RowOperands,
                     kind: type[RowInstruction], fields: Mapping[str, int] | None = None,
                     ) -> list[Instruction]:  # fmt: skip
    """Return the LOADs and `kind` instructions of `node`'s blocks of rows `ops` (module
    docstring), each instruction given `fields` besides the shared ones."""
    shared = _requantization(node, ctx, ops.flip_out) | dict(fields or {})
    code: list[Instruction] = []
    for r0 in range(0, ops.rows, ops.block):
        m = min(ops.block, ops.rows - r0)
        spad = ops.first + (r0 // ops.block % 2) * ops.half
        code += load_rows(ops.x.address + r0 * ops.x_stride, ops.x_stride, m, ops.length, spad,
                          ctx.config, ops.flip_in, last=r0 + m == ops.rows)  # fmt: skip
        code.append(kind(
            in_row=spad, m=m, length=ops.length, ext=ops.y.address + r0 * ops.y_stride, n0=m,
            row_stride0=ops.y_stride if m > 1 else 0, flip_sign=ops.flip_out,  # type: ignore[call-arg]
            **shared,
        ))  # fmt: skip
    return code


def load_rows(address: int, stride: int, m: int, length: int, row: int, config: ArrayConfig,
              flip: bool, *, last: bool) -> list[Instruction]:  # fmt: skip
    """Return the LOADs of `m` tensor rows of `length` elements (`stride` bytes apart, from
    `address`) into spad_in rows `row ..`, C = ceil(length / dim) per tensor row. With `last`
    (the block ends the tensor) a ragged final chunk is loaded alone, exactly."""
    dim = config.dim
    chunks = row_chunks(length, config)
    width = min(length, dim)
    count = m * chunks
    tail = length - (chunks - 1) * dim
    exact_tail = last and chunks > 1 and tail < dim
    if exact_tail:
        count -= 1
    code: list[Instruction] = []
    if count:
        code.append(Load(LoadTarget.SPAD_IN, row, count, address, n0=chunks,
                         row_stride0=dim if chunks > 1 else 0,
                         row_stride1=stride if count > chunks else 0,
                         length=width, run=width, n_mid=1, flip_sign=flip))  # fmt: skip
    if exact_tail:
        code.append(Load(LoadTarget.SPAD_IN, row + count, 1,
                         address + (m - 1) * stride + (chunks - 1) * dim,
                         length=tail, run=tail, n_mid=1, flip_sign=flip))  # fmt: skip
    return code
