"""QAdd lowered to LOAD A, LOAD B, ADD, on the golden machine against the reference, bit for
bit: channel-last maps (also inside a halo), row-major matrices, tiles, mixed types."""

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.ir import DataType, Tensor
from systolic.isa.instructions import Add
from systolic.isa.program import LayerUnit
from systolic.mapper.lowering import compile_model
from systolic.reference.executor import run_graph
from systolic.simulation.layer_check import check_layers
from systolic.simulation.runner import simulate

from .graphs import OPSETS, graph, node, qconv, qmatmul, random_input

U8, I8 = DataType.UINT8, DataType.INT8

CONFIGS = {
    "4x4": ArrayConfig(rows=4, cols=4),
    "8x8-os": ArrayConfig(rows=8, cols=8, dataflow=Dataflow.OS),
    "2x3-tiny-spad": ArrayConfig(rows=2, cols=3, spad_kib=1),
}


def _add(a_type, b_type, y_type, **extra):  # type: ignore[no-untyped-def]
    attrs = {
        "a_zero_point": 9 if a_type == U8 else -4,
        "b_zero_point": 200 if b_type == U8 else 3,
        "multiplier_a": 1_518_500_250,
        "multiplier_b": -1_073_741_824,
        "shift": 0,
        "y_zero_point": 128 if y_type == U8 else -2,
        "y_type": int(y_type),
    }
    attrs.update(extra)
    return node("QAdd", ["a", "b"], "y", **attrs)


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
@pytest.mark.parametrize("shape", [(1, 5, 6, 7), (2, 9, 3, 4), (1, 6, 10), (3, 13), (17,)])
@pytest.mark.parametrize("types", [(U8, U8, U8), (I8, I8, I8), (U8, I8, U8)],
                         ids=["u8", "i8", "mixed"])  # fmt: skip
def test_add_matches_the_reference(config, shape, types):  # type: ignore[no-untyped-def]
    a_type, b_type, y_type = types
    g = graph({"a": (a_type, shape), "b": (b_type, shape)}, {"y": y_type},
              [_add(*types, shift=-1)])  # fmt: skip
    compiled = compile_model(g, config)
    assert [layer.unit for layer in compiled.layers] == [LayerUnit.VECTOR]
    inputs = {"a": random_input(a_type, shape, 1), "b": random_input(b_type, shape, 2)}
    assert check_layers(compiled, inputs) is None
    expected = run_graph(compiled.graph, inputs, opsets=OPSETS)["y"]
    np.testing.assert_array_equal(simulate(compiled, inputs)["y"], expected)


def test_add_of_a_map_inside_a_halo_with_clamping():
    conv, constants = qconv("y", "z", 6, 4, seed=5, x_zp=128)
    add = _add(U8, U8, U8, y_lo=30, y_hi=220)
    g = graph({"a": (U8, (1, 6, 5, 5)), "b": (U8, (1, 6, 5, 5))}, {"z": U8}, [add, conv],
              constants)  # fmt: skip
    compiled = compile_model(g, ArrayConfig(rows=4, cols=4))
    y = compiled.program.tensor("y")
    assert y.strides == (6 * 7 * 7, 1, 7 * 6, 6)  # inside a one-pixel halo
    inputs = {"a": random_input(U8, (1, 6, 5, 5), 3), "b": random_input(U8, (1, 6, 5, 5), 4)}
    assert check_layers(compiled, inputs) is None
    assert [layer.name for layer in compiled.layers] == ["y", "z"]


def test_rows_are_tiled_to_fit_the_scratchpad():
    shape = (1, 3, 40, 30)
    g = graph({"a": (I8, shape), "b": (I8, shape)}, {"y": I8}, [_add(I8, I8, I8)])
    config = ArrayConfig(rows=4, cols=4, spad_kib=1)
    compiled = compile_model(g, config)
    adds = [i for i in compiled.program.instructions if isinstance(i, Add)]
    assert len(adds) > 1
    assert all(a.m <= 128 // 4 for a in adds)  # a quarter of spad_in each
    inputs = {"a": random_input(I8, shape, 5), "b": random_input(I8, shape, 6)}
    assert check_layers(compiled, inputs) is None


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
@pytest.mark.parametrize("shapes", [((2, 5, 21), (21,)), ((7, 13), (1, 13)),
                                    ((2, 3, 20), (1, 1, 20))],
                         ids=["rank3", "matrix", "rank3-b3"])  # fmt: skip
def test_add_of_a_vector_along_the_last_axis(config, shapes):  # type: ignore[no-untyped-def]
    """LayerNorm's beta: B along A's last axis, loaded once per lane chunk (b_broadcast)."""
    a_shape, b_shape = shapes
    g = graph({"a": (U8, a_shape), "b": (I8, b_shape)}, {"y": U8}, [_add(U8, I8, U8, shift=-1)])
    compiled = compile_model(g, config)
    assert [layer.unit for layer in compiled.layers] == [LayerUnit.VECTOR]
    adds = [i for i in compiled.program.instructions if isinstance(i, Add)]
    assert adds and all(i.b_broadcast and not i.mul for i in adds)
    inputs = {"a": random_input(U8, a_shape, 7), "b": random_input(I8, b_shape, 8)}
    assert check_layers(compiled, inputs) is None
    expected = run_graph(compiled.graph, inputs, opsets=OPSETS)["y"]
    np.testing.assert_array_equal(simulate(compiled, inputs)["y"], expected)


def test_add_of_a_constant_beta():
    """B an int8 constant [H] (a QDQ LayerNorm's beta) is placed in memory like a computed B."""
    beta = Tensor("b", DataType.INT8, np.arange(-9, 9, dtype=np.int8))
    g = graph({"a": (U8, (3, 4, 18))}, {"y": U8}, [_add(U8, I8, U8)], [beta])
    compiled = compile_model(g, ArrayConfig(rows=4, cols=4))
    assert [layer.unit for layer in compiled.layers] == [LayerUnit.VECTOR]
    inputs = {"a": random_input(U8, (3, 4, 18), 9)}
    assert check_layers(compiled, inputs) is None
    expected = run_graph(compiled.graph, inputs, opsets=OPSETS)["y"]
    np.testing.assert_array_equal(simulate(compiled, inputs)["y"], expected)


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
@pytest.mark.parametrize("shapes", [((2, 19, 3, 4), (1, 19, 1, 1)), ((2, 6, 5, 3), (2, 6, 1, 1)),
                                    ((4, 21), (1, 21))],
                         ids=["n1", "per-image", "matrix"])  # fmt: skip
def test_add_of_a_per_channel_vector(config, shapes):  # type: ignore[no-untyped-def]
    """A batch norm's shift: B [N or 1, C, 1, 1] over channel-last A, one row per channel
    chunk read for every pixel (b_broadcast), with a Relu's clamp."""
    a_shape, b_shape = shapes
    g = graph({"a": (U8, a_shape), "b": (I8, b_shape)}, {"y": U8},
              [_add(U8, I8, U8, shift=-1, y_lo=128)])  # fmt: skip
    compiled = compile_model(g, config)
    assert [layer.unit for layer in compiled.layers] == [LayerUnit.VECTOR]
    adds = [i for i in compiled.program.instructions if isinstance(i, Add)]
    assert adds and all(i.b_broadcast and not i.mul for i in adds)
    inputs = {"a": random_input(U8, a_shape, 10), "b": random_input(I8, b_shape, 11)}
    assert check_layers(compiled, inputs) is None
    expected = run_graph(compiled.graph, inputs, opsets=OPSETS)["y"]
    np.testing.assert_array_equal(simulate(compiled, inputs)["y"], expected)


def test_add_of_a_constant_per_channel_shift():
    """B an int8 constant [1, C, 1, 1] (channel_affine's shift) is placed in memory and read
    one channel chunk at a time."""
    shift = Tensor("b", DataType.INT8, np.arange(-5, 6, dtype=np.int8).reshape(1, 11, 1, 1))
    g = graph({"a": (U8, (1, 11, 5, 6))}, {"y": U8}, [_add(U8, I8, U8)], [shift])
    compiled = compile_model(g, ArrayConfig(rows=4, cols=4))
    assert [layer.unit for layer in compiled.layers] == [LayerUnit.VECTOR]
    inputs = {"a": random_input(U8, (1, 11, 5, 6), 12)}
    assert check_layers(compiled, inputs) is None
    expected = run_graph(compiled.graph, inputs, opsets=OPSETS)["y"]
    np.testing.assert_array_equal(simulate(compiled, inputs)["y"], expected)


def test_per_channel_add_of_a_rank_3_tensor_stores_it_channel_last():
    """[N, C, W] plus [1, C, 1] (a group norm's shift): A and Y are stored channel-last."""
    g = graph({"a": (U8, (2, 5, 6)), "b": (U8, (1, 5, 1))}, {"y": U8}, [_add(U8, U8, U8)])
    compiled = compile_model(g, CONFIGS["4x4"])
    assert compiled.layers[0].unit is LayerUnit.VECTOR
    assert compiled.program.tensor("y").strides == (30, 1, 5)
    inputs = {"a": random_input(U8, (2, 5, 6), 3), "b": random_input(U8, (1, 5, 1), 4)}
    assert check_layers(compiled, inputs) is None
    expected = run_graph(compiled.graph, inputs, opsets=OPSETS)["y"]
    np.testing.assert_array_equal(simulate(compiled, inputs)["y"], expected)


def test_a_bias_added_to_an_attention_product_is_stored_like_it():
    """An attention product [1, H, S, S] is row-major; a bias input of that shape is stored
    row-major too (the memory plan's layout groups), so the vector unit pairs their elements
    (on the host before: a channel-last bias; once an internal error)."""
    product, constants = qmatmul("x", "m", 3, 4, seed=5)
    add = node("QAdd", ["m", "b"], "y", a_zero_point=3, b_zero_point=-4,
               multiplier_a=1 << 30, multiplier_b=1 << 29, shift=0, y_zero_point=1,
               y_type=int(I8))
    g = graph({"x": (I8, (1, 2, 4, 3)), "b": (I8, (1, 2, 4, 4))}, {"y": I8}, [product, add],
              constants)
    compiled = compile_model(g, CONFIGS["4x4"])
    assert [layer.unit for layer in compiled.layers] == [LayerUnit.ARRAY, LayerUnit.VECTOR]
    assert compiled.program.tensor("b").strides == compiled.program.tensor("m").strides == (32, 16, 4, 1)
    inputs = {"x": random_input(I8, (1, 2, 4, 3), 1), "b": random_input(I8, (1, 2, 4, 4), 2)}
    assert check_layers(compiled, inputs) is None
    expected = run_graph(compiled.graph, inputs, opsets=OPSETS)["y"]
    np.testing.assert_array_equal(simulate(compiled, inputs)["y"], expected)


def test_per_row_add_of_a_matrix_product():
    """A row-major [N, S, H] QMatMul result plus a per-channel B [1, S, 1]: one value per
    row, repeated over the lanes (row_column)."""
    product, constants = qmatmul("x", "a", 3, 9, seed=6)
    g = graph({"x": (I8, (2, 4, 3)), "b": (I8, (1, 4, 1))}, {"y": I8},
              [product, _add(I8, I8, I8)], constants)  # fmt: skip
    compiled = compile_model(g, CONFIGS["4x4"])
    assert [layer.unit for layer in compiled.layers] == [LayerUnit.ARRAY, LayerUnit.VECTOR]
    inputs = {"x": random_input(I8, (2, 4, 3), 5), "b": random_input(I8, (1, 4, 1), 6)}
    assert check_layers(compiled, inputs) is None
    expected = run_graph(compiled.graph, inputs, opsets=OPSETS)["y"]
    np.testing.assert_array_equal(simulate(compiled, inputs)["y"], expected)
