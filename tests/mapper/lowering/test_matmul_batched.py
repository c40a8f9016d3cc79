"""lower_qmatmul with a batched or computed B (attention products) on the golden machine,
against the reference QMatMul, bit for bit."""

import math

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.ir import Attrs, DataType, Node
from systolic.isa.instructions import Halt
from systolic.isa.program import TensorPlacement, TensorRole
from systolic.mapper.lowering.layer_code import BumpAllocator
from systolic.mapper.lowering.matmul import lower_qmatmul
from systolic.reference.ops.op_systolic_qmatmul import QMatMul, matmul_shape
from systolic.sim.golden.machine import Machine

ARRAYS = [(1, 1), (2, 3), (4, 4), (8, 8)]


def tight_config(rows: int, cols: int, dataflow: Dataflow) -> ArrayConfig:
    """The array with the smallest scratchpad and accumulator memory it accepts."""
    spad_kib = max(1, math.ceil(2 * (rows + cols) * max(rows, cols) / 1024))
    acc_kib = max(1, math.ceil(2 * rows * cols * 4 / 1024))
    return ArrayConfig(rows=rows, cols=cols, dataflow=dataflow, spad_kib=spad_kib, acc_kib=acc_kib)


def placed(name: str, role: TensorRole, address: int, shape: tuple[int, ...],
           dtype: DataType, order: tuple[int, ...] | None = None) -> TensorPlacement:
    """Row-major placement of `shape`, or (with `order`) of the axes permuted by `order` in
    memory: the logical tensor is then a transposed view (strides permuted)."""
    order = order or tuple(range(len(shape)))
    stored = [shape[axis] for axis in order]
    strides_stored = [1] * len(shape)
    for axis in range(len(shape) - 2, -1, -1):
        strides_stored[axis] = strides_stored[axis + 1] * stored[axis + 1]
    strides = [0] * len(shape)
    for position, axis in enumerate(order):
        strides[axis] = strides_stored[position]
    return TensorPlacement(name, role, address, shape, dtype, tuple(strides))


def random_int8(rng: np.random.Generator, shape: tuple[int, ...], dtype: type) -> np.ndarray:
    info = np.iinfo(dtype)
    return rng.integers(info.min, int(info.max) + 1, size=shape).astype(dtype)


def run_case(
    rng: np.random.Generator, a_shape: tuple[int, ...], b_shape: tuple[int, ...],
    config: ArrayConfig, *, computed: bool, b_order: tuple[int, ...] | None = None,
    per_tensor: bool = False, zero_points: tuple[int, int] | None = None,
    a_order: tuple[int, ...] | None = None,
) -> None:  # fmt: skip
    n = b_shape[-1]
    k = b_shape[-2]
    a_type = int(rng.choice([2, 3]))
    b_type = int(rng.choice([2, 3])) if computed else 3
    y_type = int(rng.choice([2, 3]))
    a_dtype = np.uint8 if a_type == 2 else np.int8
    b_dtype = np.uint8 if b_type == 2 else np.int8
    a = random_int8(rng, a_shape, a_dtype)
    b = random_int8(rng, b_shape, b_dtype)
    bias = rng.integers(-(2**10), 2**10, size=n).astype(np.int32)
    if zero_points is not None and not computed:  # B - b_zp must fit the weight width
        b = (b // 2).astype(b.dtype)
    if zero_points is not None:  # given in the int8 domain
        a_zp, b_zp = (z + (128 if t == 2 else 0) for z, t in zip(zero_points, (a_type, b_type)))
    elif computed:  # symmetric operands
        a_zp, b_zp = (128 if a_type == 2 else 0), (128 if b_type == 2 else 0)
    else:
        a_zp, b_zp = int(rng.integers(np.iinfo(a_dtype).min, int(np.iinfo(a_dtype).max) + 1)), 0
    columns = 1 if per_tensor else n
    multiplier = rng.integers(2**30, 2**31, size=columns)
    y_info = np.iinfo(np.uint8 if y_type == 2 else np.int8)
    scale = max(1.0, math.sqrt(k) * 64 * 64)
    shift = int(min(31, max(-31, math.ceil(math.log2(scale / 40)))))
    attrs = {
        "a_zero_point": a_zp,
        "b_zero_point": b_zp,
        "multiplier": tuple(int(v) for v in multiplier),
        "shift": (shift,) * columns,
        "y_zero_point": int(rng.integers(y_info.min, int(y_info.max) + 1)),
        "y_type": y_type,
    }
    op = QMatMul(Attrs(attrs), 1, "layer")  # type: ignore[arg-type]
    expected = op.run([a, b, bias])[0]
    shape = matmul_shape(a.shape, b.shape)
    assert shape is not None and expected.shape == shape
    kinds = {2: DataType.UINT8, 3: DataType.INT8}
    a_place = placed("a", TensorRole.INPUT, 32, a.shape, kinds[a_type], a_order)
    b_place = placed("b", TensorRole.INPUT, a_place.end + 8, b.shape, kinds[b_type], b_order)
    y_place = placed("y", TensorRole.OUTPUT, b_place.end + 8, expected.shape, kinds[y_type])
    alloc = BumpAllocator(y_place.end + 16)
    node_inputs = ("a", "b", "bias")
    node = Node("QMatMul", node_inputs, ("y",), domain="systolic", version=1, name="layer",
                attrs=Attrs(attrs))  # type: ignore[arg-type]  # fmt: skip
    constants: dict[str, np.ndarray] = {"bias": bias}
    if not computed:
        constants["b"] = b
    code = lower_qmatmul(node, a_place, y_place, config, alloc, constants=constants,
                         b=b_place if computed else None)  # fmt: skip
    machine = Machine(config, alloc.next_address + 64)
    for segment in code.segments:
        machine.memory[segment.address : segment.end] = np.frombuffer(segment.data, np.uint8)
    machine.write_tensor(a_place, a)
    if computed:
        machine.write_tensor(b_place, b)
    machine.run([*code.instructions, Halt()])
    np.testing.assert_array_equal(machine.read_tensor(y_place), expected)
    assert code.stats.macs == math.prod(expected.shape) * k


CASES = [
    # (A shape, B shape, computed, B memory order (transposed view), per-tensor multiplier)
    ((2, 5, 7), (2, 7, 9), False, None, False),  # batched constant B
    ((3, 1, 4, 6), (2, 6, 5), False, None, False),  # broadcast both ways
    ((1, 2, 5, 6), (1, 2, 6, 7), True, None, True),  # attention Q·K^T, K stored as given
    ((1, 2, 5, 6), (1, 2, 6, 5), True, (0, 1, 3, 2), True),  # K^T as a transposed view
    ((2, 3, 9), (2, 9, 11), True, (0, 2, 1), False),  # ragged N, column stride K
    ((6,), (3, 6, 4), True, None, True),  # 1-D A against a batched B
    ((2, 4, 17), (17, 3), True, (1, 0), True),  # computed 2-D B, transposed
    ((1, 2, 3, 20), (1, 1, 20, 13), True, None, False),  # B broadcast over heads
]


@pytest.mark.parametrize("dataflow", [Dataflow.WS, Dataflow.OS])
@pytest.mark.parametrize("array", ARRAYS)
@pytest.mark.parametrize("index", range(len(CASES)))
def test_batched_and_computed_b_match_reference(
    index: int, array: tuple[int, int], dataflow: Dataflow
) -> None:
    a_shape, b_shape, computed, order, per_tensor = CASES[index]
    rng = np.random.default_rng(5000 + 10 * index + array[0])
    run_case(rng, a_shape, b_shape, tight_config(*array, dataflow), computed=computed,
             b_order=order, per_tensor=per_tensor)  # fmt: skip


ASYMMETRIC = [
    # (A shape, B shape, B memory order, (α, β) in the int8 domain)
    ((1, 2, 5, 6), (1, 2, 6, 5), (0, 1, 3, 2), (-5, -4)),  # Q·K^T as onnxruntime quantizes it
    ((1, 2, 5, 5), (1, 2, 5, 6), None, (-128, 3)),  # scores (uint8 zp 0) · V
    ((2, 3, 9), (2, 9, 11), (0, 2, 1), (0, -128)),  # only B asymmetric, -β = 128
    ((2, 4, 17), (17, 3), (1, 0), (-128, 0)),  # only A, uint8 zp 0: two constant blocks
    ((6,), (3, 6, 4), None, (60, 17)),  # 1-D A
]


@pytest.mark.parametrize("dataflow", [Dataflow.WS, Dataflow.OS])
@pytest.mark.parametrize("array", [(1, 1), (2, 3), (4, 4)])
@pytest.mark.parametrize("index", range(len(ASYMMETRIC)))
def test_asymmetric_computed_product_matches_reference(
    index: int, array: tuple[int, int], dataflow: Dataflow
) -> None:
    a_shape, b_shape, order, zero_points = ASYMMETRIC[index]
    rng = np.random.default_rng(7000 + 10 * index + array[0])
    run_case(rng, a_shape, b_shape, tight_config(*array, dataflow), computed=True,
             b_order=order, zero_points=zero_points)  # fmt: skip


def test_asymmetric_product_reads_a_strided_k() -> None:
    """A whose K is not contiguous (a transposed view) is copied to rows first."""
    rng = np.random.default_rng(77)
    run_case(rng, (2, 5, 4), (2, 4, 3), tight_config(4, 4, Dataflow.WS), computed=True,
             a_order=(0, 2, 1), zero_points=(-7, 9))  # fmt: skip


@pytest.mark.parametrize(("a_shape", "b_shape"), [((3, 7), (7, 9)), ((2, 5, 7), (2, 7, 9))])
def test_a_constant_b_with_a_zero_point_matches_reference(a_shape, b_shape):
    """The op allows b_zero_point on a constant B too (the passes subtract it themselves)."""
    rng = np.random.default_rng(91)
    run_case(rng, a_shape, b_shape, tight_config(4, 4, Dataflow.WS), computed=False,
             zero_points=(3, -5))  # fmt: skip


@pytest.mark.parametrize("dataflow", [Dataflow.WS, Dataflow.OS])
@pytest.mark.parametrize(("a_shape", "b_shape", "order"), [
    ((1, 2, 5, 6), (1, 2, 6, 5), (0, 1, 3, 2)),  # Q·K^T, K^T a transposed view
    ((2, 3, 9), (1, 9, 11), None),  # B broadcast, ragged N
])
def test_a_raw_product_of_two_computed_tensors_matches_reference(a_shape, b_shape, order,
                                                                 dataflow):  # fmt: skip
    """QMatMulInt with a computed B (its int32 result corrected on the host by the passes)."""
    from systolic.mapper.lowering.integer_matmul import lower_qmatmulint
    from systolic.reference.ops.op_systolic_qmatmulint import QMatMulInt

    rng = np.random.default_rng(31)
    a = random_int8(rng, a_shape, np.uint8)
    b = random_int8(rng, b_shape, np.int8 if order else np.uint8)
    expected = QMatMulInt(Attrs({}), 1, "layer").run([a, b])[0]
    kinds = {np.dtype(np.uint8): DataType.UINT8, np.dtype(np.int8): DataType.INT8}
    a_place = placed("a", TensorRole.INPUT, 32, a.shape, kinds[a.dtype])
    b_place = placed("b", TensorRole.INPUT, a_place.end + 8, b.shape, kinds[b.dtype], order)
    y_place = TensorPlacement.contiguous("y", TensorRole.OUTPUT, b_place.end + 8, expected.shape,
                                         DataType.INT32)  # fmt: skip
    alloc = BumpAllocator(y_place.end + 16)
    node = Node("QMatMulInt", ("a", "b"), ("y",), domain="systolic", version=1, name="layer")
    config = tight_config(4, 4, dataflow)
    code = lower_qmatmulint(node, a_place, y_place, config, alloc, constants={}, b=b_place)
    machine = Machine(config, alloc.next_address + 64)
    for segment in code.segments:
        machine.memory[segment.address : segment.end] = np.frombuffer(segment.data, np.uint8)
    machine.write_tensor(a_place, a)
    machine.write_tensor(b_place, b)
    machine.run([*code.instructions, Halt()])
    np.testing.assert_array_equal(machine.read_tensor(y_place), expected)
    assert code.stats.macs == expected.size * b_shape[-2]
