"""Layout operators: re-interpretation, permuted QMatMul weights, LOAD + COPY, host fallback,
each checked on the golden machine against the reference executor."""

import numpy as np
import pytest

from systolic.config import ArrayConfig
from systolic.ir import DataType, Tensor
from systolic.isa.instructions import Copy
from systolic.isa.program import LayerUnit, TensorPlacement, TensorRole
from systolic.mapper.lowering import compile_model
from systolic.mapper.lowering.layout import address_array, strides_of
from systolic.reference.executor import run_graph
from systolic.simulation.layer_check import check_layers
from systolic.simulation.runner import simulate

from .graphs import OPSETS, graph, node, qmatmul, random_input

U8, I8 = DataType.UINT8, DataType.INT8
CONFIG = ArrayConfig(rows=4, cols=4)


def _check(g, inputs, config=CONFIG):  # type: ignore[no-untyped-def]
    compiled = compile_model(g, config)
    assert check_layers(compiled, inputs) is None
    outputs = simulate(compiled, inputs)
    expected = run_graph(compiled.graph, inputs, opsets=OPSETS)
    for name, value in expected.items():
        np.testing.assert_array_equal(outputs[name], value)
    return compiled


def _maxpool(x: str, out: str):  # type: ignore[no-untyped-def]
    return node("QMaxPool", [x], out, kernel_shape=(1, 1))


def test_address_array_and_strides_of_invert_each_other():
    placement = TensorPlacement("t", TensorRole.ACTIVATION, 100, (2, 3, 4), DataType.INT8,
                                (40, 1, 7))  # fmt: skip
    addresses = address_array(placement)
    assert addresses[1, 2, 3] == 100 + 40 + 2 + 21
    assert strides_of(addresses) == (40, 1, 7)
    assert strides_of(addresses.transpose(2, 0, 1)) == (7, 40, 1)
    assert strides_of(addresses.reshape(6, 4)) is None  # 3 * 1 != 40


def test_flatten_into_a_matmul_permutes_the_weights_instead_of_moving_data():
    pool = _maxpool("x", "p")
    flatten = node("Flatten", ["p"], "f", domain="", axis=1)
    matmul, constants = qmatmul("f", "y", 5 * 3 * 4, 6, seed=1, a_zp=128)
    g = graph({"x": (U8, (2, 5, 3, 4))}, {"y": I8}, [pool, flatten, matmul], constants)
    compiled = _check(g, {"x": random_input(U8, (2, 5, 3, 4), 1)})
    layer = compiled.layers[1]
    assert (layer.unit, layer.count) == (LayerUnit.LAYOUT, 0)
    assert "permuted" in layer.reason


def test_a_matmul_on_the_host_reads_a_permuted_flatten_with_permuted_weights():
    pool = _maxpool("x", "p")
    flatten = node("Flatten", ["p"], "f", domain="", axis=1)
    matmul, constants = qmatmul("f", "y", 4 * 3 * 3, 5, seed=2, a_zp=-1)
    g = graph({"x": (I8, (1, 4, 3, 3))}, {"y": I8}, [pool, flatten, matmul], constants)
    narrow = ArrayConfig(rows=4, cols=4, acc_width=16)  # too narrow for 36 int8 products
    compiled = _check(g, {"x": random_input(I8, (1, 4, 3, 3), 9)}, narrow)
    units = [layer.unit for layer in compiled.layers]
    assert units == [LayerUnit.VECTOR, LayerUnit.LAYOUT, LayerUnit.HOST]
    assert "accumulator" in compiled.layers[2].reason


def test_flatten_of_a_global_pool_is_a_reinterpretation():
    gap = node("QAveragePool", ["x"], "g", kernel_shape=(3, 3), scale=1.0, y_type=3)
    flatten = node("Flatten", ["g"], "f", domain="", axis=1)
    relayout = node("Reshape", ["f", "shape"], "r", domain="")
    shape = Tensor("shape", DataType.INT64, np.array([7, 1]))
    g = graph({"x": (I8, (1, 7, 3, 3))}, {"r": I8}, [gap, flatten, relayout], [shape])
    compiled = _check(g, {"x": random_input(I8, (1, 7, 3, 3), 2)})
    flat = compiled.program.tensor("f")
    assert flat.address == compiled.program.tensor("g").address
    assert compiled.layers[1].count == 0
    assert compiled.layers[2].count > 0  # a graph output owns its bytes: copied


@pytest.mark.parametrize("perm", [(0, 2, 3, 1), (0, 3, 1, 2), (1, 0, 2, 3), (0, 1, 3, 2)])
def test_transpose_is_a_strided_copy(perm):  # type: ignore[no-untyped-def]
    pool = _maxpool("x", "p")
    transpose = node("Transpose", ["p"], "t", domain="", perm=perm)
    after = _maxpool("t", "y")
    g = graph({"x": (I8, (2, 6, 3, 5))}, {"y": I8}, [pool, transpose, after])
    compiled = _check(g, {"x": random_input(I8, (2, 6, 3, 5), 3)})
    layer = compiled.layers[1]
    assert layer.unit is LayerUnit.LAYOUT
    assert any(isinstance(i, Copy) for i in compiled.program.instructions)


@pytest.mark.parametrize("axis", [1, 2, 3, -1])
def test_concat_producers_write_into_their_slices(axis):  # type: ignore[no-untyped-def]
    a, b = _maxpool("x", "a"), _maxpool("z", "b")
    concat = node("Concat", ["a", "b"], "c", domain="", axis=axis)
    after = _maxpool("c", "y")
    shapes = {"x": [1, 3, 4, 4], "z": [1, 3, 4, 4]}
    shapes["z"][axis] = 5
    g = graph({n: (U8, tuple(s)) for n, s in shapes.items()}, {"y": U8},
              [a, b, concat, after])  # fmt: skip
    inputs = {n: random_input(U8, tuple(s), i) for i, (n, s) in enumerate(shapes.items())}
    compiled = _check(g, inputs)
    layer = compiled.layers[2]
    assert (layer.unit, layer.count) == (LayerUnit.LAYOUT, 0)
    assert layer.reason == "2 inputs written in place, 0 copied"
    c = compiled.program.tensor("c")
    assert compiled.program.tensor("a").address == c.address


def test_concat_copies_graph_inputs_and_shared_values():
    a = _maxpool("x", "a")
    concat = node("Concat", ["a", "z", "x"], "c", domain="", axis=1)
    after = _maxpool("c", "y")
    g = graph({"x": (I8, (2, 3, 4, 5)), "z": (I8, (2, 6, 4, 5))}, {"y": I8},
              [a, concat, after])  # fmt: skip
    inputs = {"x": random_input(I8, (2, 3, 4, 5), 4), "z": random_input(I8, (2, 6, 4, 5), 5)}
    compiled = _check(g, inputs)
    layer = compiled.layers[1]
    assert layer.reason == "1 inputs written in place, 2 copied"
    assert any(isinstance(i, Copy) for i in compiled.program.instructions)


@pytest.mark.parametrize(("op", "extra", "shape"), [
    ("Squeeze", [Tensor("axes", DataType.INT64, np.array([2]))], (3, 5, 1)),
    ("Unsqueeze", [Tensor("axes", DataType.INT64, np.array([2]))], (3, 5)),
    ("Reshape", [Tensor("axes", DataType.INT64, np.array([5, 3]))], (3, 5)),
])  # fmt: skip
def test_row_major_reshapes_are_reinterpretations(op, extra, shape):  # type: ignore[no-untyped-def]
    add = node("QAdd", ["x", "x"], "s", multiplier_a=1 << 30, multiplier_b=1 << 30, shift=0,
               y_type=3)  # fmt: skip
    reshape = node(op, ["s", "axes"], "r", domain="")
    after = node("QAdd", ["r", "r"], "y", multiplier_a=1 << 29, multiplier_b=1 << 29, shift=0,
                 y_type=3)  # fmt: skip
    g = graph({"x": (I8, shape)}, {"y": I8}, [add, reshape, after], extra)
    compiled = _check(g, {"x": random_input(I8, shape, 6)})
    assert (compiled.layers[1].unit, compiled.layers[1].count) == (LayerUnit.LAYOUT, 0)


def test_a_reshape_that_no_strides_describe_runs_on_the_host():
    pool = _maxpool("x", "p")
    reshape = node("Reshape", ["p", "shape"], "r", domain="")
    after = node("QAdd", ["r", "r"], "y", multiplier_a=1 << 30, multiplier_b=1 << 30, shift=0,
                 y_type=3)  # fmt: skip
    shape = Tensor("shape", DataType.INT64, np.array([2, 18]))
    g = graph({"x": (I8, (1, 4, 3, 3))}, {"y": I8}, [pool, reshape, after], [shape])
    compiled = _check(g, {"x": random_input(I8, (1, 4, 3, 3), 7)})
    assert compiled.layers[1].unit is LayerUnit.HOST


F32 = DataType.FLOAT


def _float_input(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize(("op", "attrs", "shape"), [
    ("Flatten", {"axis": 1}, (2, 3, 4)),
    ("Identity", {}, (2, 3, 4)),
    ("Transpose", {"perm": (0, 2, 1)}, (2, 3, 4)),
])  # fmt: skip
def test_a_float_layout_op_moving_data_runs_on_the_host(op, attrs, shape):  # type: ignore[no-untyped-def]
    g = graph({"x": (F32, shape)}, {"y": F32}, [node(op, ["x"], "y", domain="", **attrs)])
    compiled = _check(g, {"x": _float_input(shape, 8)})
    layer = compiled.layers[0]
    assert layer.unit is LayerUnit.HOST
    assert layer.reason == "the accelerator moves only 8-bit elements, not FLOAT"
    assert not any(isinstance(i, Copy) for i in compiled.program.instructions)


def test_a_float_concat_runs_on_the_host():
    relu = node("Relu", ["x"], "r", domain="")
    concat = node("Concat", ["r", "x"], "y", domain="", axis=1)
    g = graph({"x": (F32, (1, 2, 4, 4))}, {"y": F32}, [relu, concat])
    compiled = _check(g, {"x": _float_input((1, 2, 4, 4), 9)})
    assert [layer.unit for layer in compiled.layers] == [LayerUnit.HOST, LayerUnit.HOST]
    assert not any(isinstance(i, Copy) for i in compiled.program.instructions)


def test_a_float_flatten_between_host_layers_is_a_reinterpretation():
    relu = node("Relu", ["x"], "r", domain="")
    flatten = node("Flatten", ["r"], "f", domain="", axis=1)
    after = node("Relu", ["f"], "y", domain="")
    g = graph({"x": (F32, (2, 3, 4))}, {"y": F32}, [relu, flatten, after])
    compiled = _check(g, {"x": _float_input((2, 3, 4), 10)})
    layer = compiled.layers[1]
    assert (layer.unit, layer.count) == (LayerUnit.LAYOUT, 0)
    assert compiled.program.tensor("f").address == compiled.program.tensor("r").address


@pytest.mark.parametrize(("indices", "axis"), [
    (np.array(1, np.int64), 2),            # one step of a sequence: a contiguous block
    (np.array([0, 2], np.int64), 1),        # every other channel: a strided copy
    (np.array(4, np.int64), -1),            # one column of every row: strided
])  # fmt: skip
def test_a_gather_of_constant_indices_is_a_layout(indices, axis):  # type: ignore[no-untyped-def]
    pool = _maxpool("x", "p")
    gather = node("Gather", ["p", "idx"], "g", domain="", axis=axis)
    after = node("QAdd", ["g", "g"], "y", multiplier_a=1 << 30, multiplier_b=1 << 30, shift=0,
                 y_type=3)  # fmt: skip
    g = graph({"x": (I8, (1, 3, 4, 5))}, {"y": I8}, [pool, gather, after],
              [Tensor("idx", DataType.INT64, indices)])
    compiled = _check(g, {"x": random_input(I8, (1, 3, 4, 5), 8)})
    assert compiled.layers[1].unit is LayerUnit.LAYOUT


def test_a_slice_of_constant_bounds_is_a_layout():
    pool = _maxpool("x", "p")
    bounds = [Tensor(name, DataType.INT64, np.array(value, np.int64)) for name, value in
              (("starts", [1, 0]), ("ends", [3, 5]), ("axes", [1, 3]), ("steps", [1, 2]))]
    slice_ = node("Slice", ["p", "starts", "ends", "axes", "steps"], "s", domain="")
    after = _maxpool("s", "y")
    g = graph({"x": (I8, (1, 4, 3, 5))}, {"y": I8}, [pool, slice_, after], bounds)
    compiled = _check(g, {"x": random_input(I8, (1, 4, 3, 5), 9)})
    assert compiled.layers[1].unit is LayerUnit.LAYOUT
    assert any(isinstance(i, Copy) for i in compiled.program.instructions)


def test_a_gather_against_memory_order_runs_on_the_host():
    pool = _maxpool("x", "p")
    gather = node("Gather", ["p", "idx"], "g", domain="", axis=1)
    after = _maxpool("g", "y")
    g = graph({"x": (I8, (1, 3, 4, 5))}, {"y": I8}, [pool, gather, after],
              [Tensor("idx", DataType.INT64, np.array([2, 0], np.int64))])
    compiled = _check(g, {"x": random_input(I8, (1, 3, 4, 5), 10)})
    assert compiled.layers[1].unit is LayerUnit.HOST
    assert compiled.layers[1].reason == "its element order is not a strided view of its input"
