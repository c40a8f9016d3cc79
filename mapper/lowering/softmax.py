"""Lower systolic.QSoftmax (softmax over rows of an 8-bit tensor) to the vector unit's SOFTMAX.

The exp table (256 uint16 entries) is placed as a constant of `ceil(512 / dim)` scratchpad
rows (`exp_table_image`: 512 little-endian bytes, zero-padded), LOADed into the first spad_in
rows and made the STORE unit's exp table by TABLE with `wide` (docs/isa.md, "SOFTMAX and the
exp table"). X is seen as `rows x L` (flattened from the node's `axis`): each tensor row must
be L contiguous elements in X and in Y, and the rows evenly spaced. Blocks of tensor rows
alternate between the two halves of the spad_in rows after the table's (so no LOAD overwrites
the table before TABLE reads it): one LOAD puts row i's `C = ceil(L / dim)` chunks in rows
`i*C ..` of the block (the row pattern walks chunks, then tensor rows), and one SOFTMAX writes
the block's rows of Y. A last chunk shorter than `dim` is loaded `dim` elements wide (the
lanes beyond L, read from the next tensor row, are ignored by SOFTMAX), except the tensor's
very last chunk, which gets its own LOAD of exactly its elements. uint8 inputs and outputs
flip their top bit on the way in and out (the distances below a row's maximum do not change).
"""

import math

import numpy as np

from systolic.config import ArrayConfig
from systolic.errors import ModelError, ResourceError, UnsupportedError
from systolic.ir import DataType, Node
from systolic.isa.instructions import Instruction, Load, LoadTarget, Softmax, Table
from systolic.isa.memories import Memory, depth
from systolic.isa.program import TensorPlacement
from systolic.isa.table import EXP_TABLE_BYTES, exp_table_rows
from systolic.mapper.lowering.context import LayerContext
from systolic.mapper.lowering.node_attrs import int_attr

__all__ = ["exp_table_code", "exp_table_image", "load_rows", "lower_qsoftmax", "tensor_rows"]

_FLIP = 128
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


def tensor_rows(place: TensorPlacement, axis: int, label: str,
                op: str = "QSoftmax") -> tuple[int, int, int]:  # fmt: skip
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


def lower_qsoftmax(node: Node, ctx: LayerContext) -> list[Instruction]:
    """Return the instructions of a systolic.QSoftmax node (module docstring)."""
    config = ctx.config
    x_name, y_name = node.inputs[0], node.outputs[0]
    x, y = ctx.placement(x_name), ctx.placement(y_name)
    if x.shape != y.shape or not x.shape:
        raise ModelError(f"QSoftmax {node.label!r}: Y is placed as {list(y.shape)}, X is "
                         f"{list(x.shape)}")  # fmt: skip
    axis = int_attr(node, "axis", -1) % len(x.shape)
    rows, length, x_stride = tensor_rows(x, axis, node.label)
    _, _, y_stride = tensor_rows(y, axis, node.label)
    if length > 0xFFFF:
        raise UnsupportedError(f"QSoftmax {node.label!r}: rows of {length} elements exceed "
                               "SOFTMAX's 65535")  # fmt: skip
    dim = config.dim
    chunks = -(-length // dim)
    first = exp_table_rows(config)
    half = (depth(config, Memory.SPAD_IN) - first) // 2
    block = min(rows, half // chunks)
    if block == 0:
        raise ResourceError(f"QSoftmax {node.label!r}: a row of {length} elements needs {chunks} "
                            f"spad_in rows, more than half of the {half * 2} left after the "
                            "exp table; raise spad_kib")  # fmt: skip
    flip_in = ctx.dtype(x_name) == DataType.UINT8
    flip_out = ctx.dtype(y_name) == DataType.UINT8
    shift_out = _FLIP if flip_out else 0
    info = np.iinfo(ctx.dtype(y_name).numpy)
    image = exp_table_image(_exp_entries(node, ctx), config)
    code = exp_table_code(ctx.add_constant(image), config)
    buffer = 0
    for r0 in range(0, rows, block):
        m = min(block, rows - r0)
        spad = first + buffer * half
        buffer ^= 1
        code += load_rows(x.address + r0 * x_stride, x_stride, m, length, spad, config,
                           flip_in, last=r0 + m == rows)  # fmt: skip
        code.append(Softmax(
            in_row=spad, m=m, length=length,
            multiplier=int_attr(node, "multiplier"), shift=int_attr(node, "shift"),
            zero_point=int_attr(node, "y_zero_point", 0) - shift_out,
            lo=int_attr(node, "y_lo", int(info.min)) - shift_out,
            hi=int_attr(node, "y_hi", int(info.max)) - shift_out,
            ext=y.address + r0 * y_stride, n0=m, row_stride0=y_stride if m > 1 else 0,
            flip_sign=flip_out,
        ))  # fmt: skip
    return code


def load_rows(address: int, stride: int, m: int, length: int, row: int, config: ArrayConfig,
               flip: bool, *, last: bool) -> list[Instruction]:  # fmt: skip
    """Return the LOADs of `m` tensor rows of `length` elements (`stride` bytes apart, from
    `address`) into spad_in rows `row ..`, C = ceil(length / dim) per tensor row. With `last`
    (the block ends the tensor) a ragged final chunk is loaded alone, exactly."""
    dim = config.dim
    chunks = -(-length // dim)
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
