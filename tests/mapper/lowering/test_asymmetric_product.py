"""asymmetric_product: the extended reduction that puts a product of two computed tensors
with any zero points on the array (the whole lowering against the reference is in
test_matmul_batched.py)."""

import itertools

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.errors import UnsupportedError
from systolic.ir import DataType
from systolic.isa.instructions import Copy, Load
from systolic.isa.program import LayerUnit, TensorPlacement, TensorRole
from systolic.mapper.lowering import compile_model
from systolic.mapper.lowering.asymmetric_product import augmentation, pieces, prepare
from systolic.mapper.lowering.layer_code import BumpAllocator
from systolic.reference.executor import run_graph
from systolic.simulation.runner import simulate

from .graphs import OPSETS, graph, node, random_input


def test_pieces_are_int8_and_sum_to_the_value():
    assert pieces(0) == [] and pieces(-128) == [-128] and pieces(127) == [127]
    assert pieces(128) == [64, 64]
    with pytest.raises(ValueError, match=r"^129 is not a negated int8 zero point$"):
        pieces(129)


def extended(alpha: int, beta: int, a: np.ndarray, b: np.ndarray) -> int:
    """Σ A'·B' + K·α·β for vectors a, b (K elements) built block by block as the LOADs do."""
    aug = augmentation(alpha, beta)
    a_blocks = [a] * aug.copies + [np.full_like(a, aug.a_value)] * aug.a_blocks
    b_blocks = [b if value is None else np.full_like(b, value) for value in aug.b_blocks]
    assert len(a_blocks) == len(b_blocks) == aug.blocks
    for block in (*a_blocks, *b_blocks):
        assert -128 <= block.min() and block.max() <= 127
    return sum(int(x @ y) for x, y in zip(a_blocks, b_blocks, strict=True)) + aug.bias(a.size)


ZERO_POINTS = sorted({*range(-128, 128, 7), -128, -127, -64, -1, 0, 1, 64, 127})


def test_pairs_of_zero_points_give_the_exact_product():
    r = np.random.default_rng(1)
    a = r.integers(-128, 128, 5)
    b = r.integers(-128, 128, 5)
    for alpha, beta in itertools.product(ZERO_POINTS, repeat=2):
        assert extended(alpha, beta, a, b) == int((a - alpha) @ (b - beta)), (alpha, beta)


@pytest.mark.parametrize(("alpha", "beta", "blocks"), [
    (0, 0, 1), (-5, 0, 2), (0, 7, 2), (-5, -4, 3),  # onnxruntime's Q·K^T: 3K
    (-128, 3, 4), (-128, 0, 4), (0, -128, 3), (-128, -128, 5),  # a uint8 zero point 0
])
def test_extra_blocks(alpha, beta, blocks):
    assert augmentation(alpha, beta).blocks == blocks


def placement(name: str, address: int, shape: tuple[int, ...], strides: tuple[int, ...],
              dtype: DataType) -> TensorPlacement:  # fmt: skip
    return TensorPlacement(name, TensorRole.ACTIVATION, address, shape, dtype, strides)


@pytest.mark.parametrize("transposed", [False, True])
def test_prepare_places_the_constants_and_copies_b_twice(transposed):
    config = ArrayConfig(rows=4, cols=4)
    a = placement("a", 0, (2, 3, 5), (15, 5, 1), DataType.UINT8)  # K = 5 contiguous
    b_strides = (30, 1, 5) if transposed else (30, 6, 1)  # K^T as a transposed view
    b = placement("b", 64, (2, 5, 6), b_strides, DataType.INT8)
    alloc = BumpAllocator(1024)
    product = prepare("mm", a, True, -4, b, False, 9, config, alloc)
    assert product.a == a and product.bias == 5 * -4 * 9
    shadow, b_prime = product.segments
    walk = product.walk
    assert (walk.run, walk.n_mid, walk.stride_mid) == (5, 2, 0)  # A twice
    assert shadow.address - a.address == walk.stride_outer and len(shadow.data) == 30
    assert set(shadow.data) == {4 ^ 0x80}  # −α = 4, stored as the uint8 the LOAD flips
    image = np.frombuffer(b_prime.data, np.int8)
    blocks = image.reshape(2, 3, 5, 6)  # [entry, K' block, K, N]
    np.testing.assert_array_equal(blocks[:, 1], -9)  # the −β block
    np.testing.assert_array_equal(blocks[:, [0, 2]], 0)  # B's blocks, written by the COPYs
    copies = [instr for instr in product.code if isinstance(instr, Copy)]
    loads = [instr for instr in product.code if isinstance(instr, Load)]
    assert len(copies) == 2 * len(loads)
    assert copies[1].ext - copies[0].ext == 60  # two blocks further
    weights = product.b_prime.weights((1,))
    assert (weights.address, weights.k, weights.n) == (b_prime.address + 90, 15, 6)
    assert (weights.row_stride, weights.col_stride) == (6, 1)  # row-major: whole-row LOADs


def test_the_bias_with_the_zero_points_must_fit_int32():
    config = ArrayConfig(rows=4, cols=4)
    a = placement("a", 0, (3, 5), (5, 1), DataType.INT8)
    b = placement("b", 64, (5, 2), (2, 1), DataType.INT8)
    product = prepare("mm", a, False, 100, b, False, -100, config, BumpAllocator(1024))
    assert product.biased(np.array([1, -2]), "mm").tolist() == [-49999, -50002]
    with pytest.raises(UnsupportedError, match=r"^layer 'mm': the bias plus K·α·β of the zero "
                       r"points \(-50000\) leaves int32$"):  # fmt: skip
        product.biased(np.array([-(2**31) + 10, 0]), "mm")


def test_prepare_copies_a_strided_k_into_rows():
    config = ArrayConfig(rows=4, cols=4)
    a = placement("a", 0, (3, 5), (1, 3), DataType.INT8)  # K = 5, 3 bytes apart
    b = placement("b", 64, (5, 2), (2, 1), DataType.INT8)
    product = prepare("mm", a, False, 6, b, False, 0, config, BumpAllocator(1024))
    assert product.a.strides == (5, 1) and product.a.address >= 1024
    assert product.walk.run == 5 and product.walk.n_mid == 1
    assert isinstance(product.code[0], Load) and product.code[0].ext == 0


@pytest.mark.parametrize("dataflow", [Dataflow.WS, pytest.param(Dataflow.OS,
                                                                 marks=pytest.mark.slow)])
def test_an_attention_product_with_asymmetric_operands_runs_on_the_rtl(dataflow):
    """Q·K^T as onnxruntime quantizes it (uint8, zero points 120 and 131; K^T a transposed
    view) and scores·V with a uint8 zero point 0: the Amaranth RTL equals the reference
    (about 13 s each; OS in the slow set)."""
    nodes = [node("Transpose", ["k"], "kt", domain="", perm=(0, 2, 1)),
             node("QMatMul", ["q", "kt"], "s", a_zero_point=120, b_zero_point=131,
                  multiplier=(1 << 30,), shift=(8,), y_zero_point=100, y_type=2),
             node("QMatMul", ["p", "s"], "y", a_zero_point=0, b_zero_point=100,
                  multiplier=(1 << 30,), shift=(7,), y_zero_point=124, y_type=2)]  # fmt: skip
    shapes = {"q": (2, 3, 5), "k": (2, 4, 5), "p": (2, 2, 3)}
    g = graph({name: (DataType.UINT8, shape) for name, shape in shapes.items()},
              {"s": DataType.UINT8, "y": DataType.UINT8}, nodes)  # fmt: skip
    compiled = compile_model(g, ArrayConfig(rows=2, cols=2, dataflow=dataflow))
    assert [layer.unit for layer in compiled.layers][1:] == [LayerUnit.ARRAY] * 2
    feeds = {name: random_input(DataType.UINT8, shape, i)
             for i, (name, shape) in enumerate(shapes.items())}  # fmt: skip
    expected = run_graph(compiled.graph, feeds, opsets=OPSETS)
    assert len(np.unique(expected["s"])) > 8 and len(np.unique(expected["y"])) > 4
    got = simulate(compiled, feeds, backend="rtl")
    for name in ("s", "y"):
        np.testing.assert_array_equal(got[name], expected[name])
