"""The rows of a row-wise node (QSoftmax, QLayerNorm): contiguous, evenly spaced tensor rows,
the checks both lowerings share (placement, length, spad_in room, each naming the node), the
blocks of rows and the LOADs of one block."""

import math
import re

import pytest

from systolic.config import ArrayConfig
from systolic.errors import ModelError, ResourceError, UnsupportedError
from systolic.ir import DataType, Node
from systolic.isa.instructions import Load, LoadTarget
from systolic.isa.memories import Memory, depth
from systolic.isa.program import TensorPlacement, TensorRole
from systolic.mapper.lowering.context import LayerContext
from systolic.mapper.lowering.memory_plan import MemoryPlan
from systolic.mapper.lowering.row_operands import load_rows, row_operands, tensor_rows

from .graphs import graph, node

U8, I8 = DataType.UINT8, DataType.INT8
CONFIG = ArrayConfig(rows=4, cols=4)
OPS = {"QSoftmax": "SOFTMAX", "QLayerNorm": "LAYERNORM"}


def _place(name: str, shape: tuple[int, ...], dtype: DataType, address: int = 0,
           strides: tuple[int, ...] | None = None) -> TensorPlacement:  # fmt: skip
    if strides is None:
        strides = tuple(math.prod(shape[i + 1:]) for i in range(len(shape)))
    role = TensorRole.INPUT if name == "x" else TensorRole.OUTPUT
    return TensorPlacement(name, role, address, shape, dtype, strides)


def _context(op: str, x: TensorPlacement, y: TensorPlacement,
             config: ArrayConfig = CONFIG) -> tuple[Node, LayerContext]:  # fmt: skip
    inputs = ["x", "E"] if op == "QSoftmax" else ["x"]
    g = graph({"x": (x.dtype, x.shape)}, {"y": y.dtype},
              [node(op, inputs, "y", multiplier=1 << 30, shift=7)])  # fmt: skip
    plan = MemoryPlan(config)
    plan.alias(x)
    plan.alias(y)
    return g.nodes[0], LayerContext(config, g, plan)


def test_tensor_rows_are_contiguous_and_evenly_spaced() -> None:
    row_major = _place("x", (2, 3, 5), U8)
    assert tensor_rows(row_major, 2, "s", "QSoftmax") == (6, 5, 5)
    assert tensor_rows(row_major, 1, "s", "QSoftmax") == (2, 15, 15)
    assert tensor_rows(_place("x", (4, 3), U8, strides=(7, 1)), 1, "s", "QSoftmax") == (4, 3, 7)
    assert tensor_rows(_place("x", (1, 9), U8, strides=(1, 1)), 1, "s", "QSoftmax") == (1, 9, 9)


@pytest.mark.parametrize(
    ("place", "axis", "message"),
    [
        (_place("x", (1, 4, 3, 5), U8, strides=(60, 1, 20, 4)), 3,
         ("QLayerNorm 'n': the rows of 'x' are not contiguous in memory (the vector unit reads "
          "and writes contiguous rows)")),
        (_place("x", (2, 3, 4), U8, strides=(13, 4, 1)), 2,
         "QLayerNorm 'n': the rows of 'x' are not evenly spaced in memory"),
    ],
)
def test_tensor_rows_refuses_other_layouts(place: TensorPlacement, axis: int,
                                           message: str) -> None:  # fmt: skip
    with pytest.raises(UnsupportedError, match=f"^{re.escape(message)}$"):
        tensor_rows(place, axis, "n", "QLayerNorm")


@pytest.mark.parametrize("op", OPS)
def test_row_operands_and_blocks(op: str) -> None:
    x, y = _place("x", (40, 30), U8), _place("y", (40, 30), I8, address=2000)
    ops = row_operands(*_context(op, x, y), OPS[op], first=6, room="its {}")
    half = (depth(CONFIG, Memory.SPAD_IN) - 6) // 2
    assert (ops.rows, ops.length, ops.x_stride, ops.y_stride) == (40, 30, 30, 30)
    assert (ops.flip_in, ops.flip_out, ops.first, ops.half) == (True, False, 6, half)
    assert ops.block == min(40, half // 8)  # (8 chunks of 4 per row)


@pytest.mark.parametrize("op", OPS)
def test_row_operands_refuses_y_placed_otherwise(op: str) -> None:
    x, y = _place("x", (4, 6), I8), _place("y", (6, 4), I8, address=100)
    message = f"{op} 'y': Y is placed as [6, 4], X is [4, 6]"
    with pytest.raises(ModelError, match=f"^{re.escape(message)}$"):
        row_operands(*_context(op, x, y), OPS[op], first=0, room="its {}")


@pytest.mark.parametrize("op", OPS)
def test_row_operands_refuses_rows_beyond_the_length_field(op: str) -> None:
    x, y = _place("x", (2, 65536), I8), _place("y", (2, 65536), I8, address=1 << 18)
    message = f"{op} 'y': rows of 65536 elements exceed {OPS[op]}'s 65535"
    with pytest.raises(UnsupportedError, match=f"^{re.escape(message)}$"):
        row_operands(*_context(op, x, y), OPS[op], first=0, room="its {}")


@pytest.mark.parametrize("op", OPS)
def test_row_operands_refuses_a_row_longer_than_half_the_room(op: str) -> None:
    config = ArrayConfig(rows=4, cols=4, spad_kib=1)
    rows = depth(config, Memory.SPAD_IN)
    length = 4 * (rows - 10) // 2 + 1  # one chunk more than half of the rows after 10
    x, y = _place("x", (2, length), I8), _place("y", (2, length), I8, address=1 << 16)
    message = (f"{op} 'y': a row of {length} elements needs {(rows - 10) // 2 + 1} spad_in "
               f"rows, more than half of the {rows - 10} left; raise spad_kib")
    with pytest.raises(ResourceError, match=f"^{re.escape(message)}$"):
        row_operands(*_context(op, x, y, config), OPS[op], first=10, room="the {} left")


def test_load_rows_loads_a_ragged_last_chunk_exactly_only_at_the_tensor_end() -> None:
    # 3 rows of 10 on dim 4: C = 3 chunks a row, the last 2 elements long
    inner = load_rows(100, 10, 3, 10, 8, CONFIG, True, last=False)
    assert inner == [Load(LoadTarget.SPAD_IN, 8, 9, 100, n0=3, row_stride0=4, row_stride1=10,
                          length=4, run=4, n_mid=1, flip_sign=True)]  # fmt: skip
    end = load_rows(100, 10, 3, 10, 8, CONFIG, False, last=True)
    assert end == [Load(LoadTarget.SPAD_IN, 8, 8, 100, n0=3, row_stride0=4, row_stride1=10,
                        length=4, run=4, n_mid=1),
                   Load(LoadTarget.SPAD_IN, 16, 1, 128, length=2, run=2, n_mid=1)]  # fmt: skip
    assert load_rows(0, 3, 2, 3, 0, CONFIG, False, last=True) == [
        Load(LoadTarget.SPAD_IN, 0, 2, 0, n0=1, row_stride1=3, length=3, run=3, n_mid=1)]
