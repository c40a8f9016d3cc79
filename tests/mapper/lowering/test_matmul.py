"""lower_qmatmul on the golden machine against the reference QMatMul, bit for bit."""

import math

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.errors import UnsupportedError
from systolic.ir import Attrs, DataType
from systolic.isa.program import TensorPlacement, TensorRole
from systolic.mapper.lowering.matmul import lower_qmatmul, row_blocks
from systolic.reference.ops.op_systolic_qmatmul import QMatMul

ARRAYS = [(1, 1), (2, 3), (4, 4), (8, 8), (16, 16)]


def tight_config(rows: int, cols: int, dataflow: Dataflow) -> ArrayConfig:
    """The array with the smallest scratchpad and accumulator memory it accepts."""
    spad_kib = max(1, math.ceil(2 * (rows + cols) * max(rows, cols) / 1024))
    acc_kib = max(1, math.ceil(2 * rows * cols * 4 / 1024))
    return ArrayConfig(rows=rows, cols=cols, dataflow=dataflow, spad_kib=spad_kib, acc_kib=acc_kib)


def padded_placement(
    name: str, role: TensorRole, address: int, shape: tuple[int, ...], dtype: DataType,
    last_stride: int, row_pad: int,
) -> TensorPlacement:  # fmt: skip
    """Row-major placement whose rows are `row_pad` elements longer than needed."""
    strides = [last_stride]
    step = (shape[-1] - 1) * last_stride + 1 + row_pad
    for size in reversed(shape[:-1]):
        strides.append(step)
        step *= size
    return TensorPlacement(name, role, address, shape, dtype, tuple(reversed(strides)))


def run_matmul(
    rng: np.random.Generator, lead: tuple[int, ...], k: int, n: int, config: ArrayConfig,
    harness: object, *, strided_k: bool = False,
) -> None:  # fmt: skip
    a_type, y_type = int(rng.choice([2, 3])), int(rng.choice([2, 3]))
    a_dtype = np.uint8 if a_type == 2 else np.int8
    info = np.iinfo(a_dtype)
    a = rng.integers(info.min, int(info.max) + 1, size=(*lead, k)).astype(a_dtype)
    b = rng.integers(-128, 128, size=(k, n)).astype(np.int8)
    bias = rng.integers(-(2**12), 2**12, size=n).astype(np.int32)
    a_zp = int(rng.integers(info.min, int(info.max) + 1))
    acc = (a.astype(np.int64) - a_zp).reshape(-1, k) @ b.astype(np.int64)
    multiplier = rng.integers(2**30, 2**31, size=n)
    spread = np.maximum(acc.std(axis=0), 1.0) * multiplier / 2.0**31
    y_info = np.iinfo(np.uint8 if y_type == 2 else np.int8)
    attrs = {
        "a_zero_point": a_zp,
        "multiplier": tuple(int(v) for v in multiplier),
        "shift": tuple(int(min(31, max(-31, math.ceil(math.log2(s / 40))))) for s in spread),
        "y_zero_point": int(rng.integers(y_info.min, int(y_info.max) + 1)),
        "y_type": y_type,
    }
    expected = QMatMul(Attrs(attrs), 1, "layer").run([a, b, bias])[0]  # type: ignore[arg-type]
    a_kind = DataType.UINT8 if a_type == 2 else DataType.INT8
    y_kind = DataType.UINT8 if y_type == 2 else DataType.INT8
    a_place = padded_placement("a", TensorRole.INPUT, 32, a.shape, a_kind,
                               3 if strided_k else 1, int(rng.integers(0, 3)))  # fmt: skip
    y_place = padded_placement("y", TensorRole.OUTPUT, a_place.end + 16, expected.shape, y_kind,
                               1, int(rng.integers(0, 3)))  # fmt: skip
    alloc = harness.allocator(y_place.end + 8)  # type: ignore[attr-defined]
    node = harness.node("QMatMul", ("a", "b", "bias"), **attrs)  # type: ignore[attr-defined]
    code = lower_qmatmul(node, a_place, y_place, config, alloc,
                         constants={"b": b, "bias": bias})  # fmt: skip
    x_buffer = _Buffer(a_place, a_place.address, b"")
    y_buffer = _Buffer(y_place, y_place.address, b"")
    got = harness.run_layer(code, config, [x_buffer, y_buffer], a, alloc.next_address + 64)  # type: ignore[attr-defined]
    np.testing.assert_array_equal(got, expected)
    assert code.stats.macs == math.prod(lead) * k * n


class _Buffer:
    def __init__(self, placement: TensorPlacement, start: int, data: bytes) -> None:
        self.placement, self.start, self.data = placement, start, data


SHAPES = [
    ((5,), 7, 3), ((1,), 1, 1), ((9,), 1, 20), ((3, 4), 17, 9), ((2, 3, 5), 33, 18),
    ((2, 2, 2, 3), 6, 5), ((40,), 50, 37), ((), 20, 19), ((12,), 64, 64), ((7, 3), 3, 40),
]  # fmt: skip
MATMUL_CASES = [
    (index, shape, ARRAYS[index % 5], dataflow)
    for index, shape in enumerate(SHAPES)
    for dataflow in (Dataflow.WS, Dataflow.OS)
]


@pytest.mark.parametrize(("index", "shape", "array", "dataflow"), MATMUL_CASES)
def test_random_matmul_matches_reference(
    index: int, shape: tuple[tuple[int, ...], int, int], array: tuple[int, int],
    dataflow: Dataflow, harness: object,
) -> None:  # fmt: skip
    rng = np.random.default_rng(2000 + index)
    lead, k, n = shape
    run_matmul(rng, lead, k, n, tight_config(*array, dataflow), harness,
               strided_k=index % 3 == 1)  # fmt: skip


def test_row_blocks_flatten_leading_axes_in_row_major_order() -> None:
    blocks = row_blocks(100, (2, 3, 4), (1000, 50, 7))
    addresses = [
        b.base + (r // b.n0) * b.stride1 + (r % b.n0) * b.stride0
        for b in blocks
        for r in range(b.count)
    ]
    expected = [
        100 + i * 1000 + j * 50 + q * 7 for i in range(2) for j in range(3) for q in range(4)
    ]
    assert addresses == expected


def test_non_contiguous_output_rows_are_refused(harness: object) -> None:
    a = TensorPlacement.contiguous("a", TensorRole.INPUT, 0, (4, 8), DataType.INT8)
    y = TensorPlacement("y", TensorRole.OUTPUT, 64, (4, 3), DataType.INT8, (6, 2))
    node = harness.node("QMatMul", ("a", "b"), multiplier=(1 << 30,) * 3, shift=(0,) * 3,  # type: ignore[attr-defined]
                        y_type=3)  # fmt: skip
    with pytest.raises(UnsupportedError, match=r"^layer 'layer': Y \('y'\) must have contiguous"):
        lower_qmatmul(node, a, y, ArrayConfig(), harness.allocator(256),  # type: ignore[attr-defined]
                      constants={"b": np.ones((8, 3), np.int8)})  # fmt: skip
