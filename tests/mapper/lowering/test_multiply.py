"""systolic.QMul lowered to LOAD A, LOAD B, ADD with mul (b_broadcast for a per-channel B), on
the golden machine against the reference executor, bit for bit."""

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.errors import ModelError
from systolic.ir import DataType
from systolic.isa.instructions import Add
from systolic.isa.program import LayerUnit
from systolic.mapper.lowering import compile_model
from systolic.mapper.lowering.multiply import broadcast_form
from systolic.reference.executor import run_graph
from systolic.simulation.layer_check import check_layers
from systolic.simulation.runner import simulate

from .graphs import OPSETS, graph, node, qconv, qmatmul, random_input

U8, I8 = DataType.UINT8, DataType.INT8

CONFIGS = {
    "4x4": ArrayConfig(rows=4, cols=4),
    "8x8-os": ArrayConfig(rows=8, cols=8, dataflow=Dataflow.OS),
    "16x16": ArrayConfig(rows=16, cols=16),
}


def _mul(a_type, b_type, y_type, a="a", b="b", **extra):  # type: ignore[no-untyped-def]
    attrs = {
        "a_zero_point": 9 if a_type == U8 else -4,
        "b_zero_point": 200 if b_type == U8 else 3,
        "multiplier": 1_518_500_250,
        "shift": -6,
        "y_zero_point": 128 if y_type == U8 else -2,
        "y_type": int(y_type),
    }
    attrs.update(extra)
    return node("QMul", [a, b], "y", **attrs)


def _run(g, config, inputs):  # type: ignore[no-untyped-def]
    compiled = compile_model(g, config)
    assert check_layers(compiled, inputs) is None
    expected = run_graph(compiled.graph, inputs, opsets=OPSETS)["y"]
    np.testing.assert_array_equal(simulate(compiled, inputs)["y"], expected)
    return compiled


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
@pytest.mark.parametrize(
    "shapes",
    [
        ((1, 5, 6, 7), (1, 5, 6, 7)),
        ((2, 9, 3, 4), (2, 9, 3, 4)),
        ((3, 13), (3, 13)),
        ((17,), (17,)),
        ((2, 19, 3, 4), (2, 19, 1, 1)),  # squeeze-excitation scaling
        ((2, 6, 5, 3), (1, 6, 1, 1)),
        ((4, 21), (1, 21)),
        ((2, 5, 21), (21,)),  # LayerNorm's gamma over the last axis
        ((2, 3, 20), (1, 1, 20)),
        ((1, 3, 2, 20), (20,)),  # ConvNeXt's layer scale after the channels-last permute
    ],
    ids=["map", "batch", "matrix", "vector", "per-channel", "per-channel-n1", "matrix-n1",
         "last-axis", "last-axis-rank3", "last-axis-rank4"],
)
@pytest.mark.parametrize("types", [(U8, U8, U8), (I8, I8, I8), (U8, I8, U8)],
                         ids=["u8", "i8", "mixed"])  # fmt: skip
def test_mul_matches_the_reference(config, shapes, types):  # type: ignore[no-untyped-def]
    a_shape, b_shape = shapes
    a_type, b_type, y_type = types
    g = graph({"a": (a_type, a_shape), "b": (b_type, b_shape)}, {"y": y_type},
              [_mul(*types, y_lo=5 if y_type == U8 else -120)])  # fmt: skip
    inputs = {"a": random_input(a_type, a_shape, 1), "b": random_input(b_type, b_shape, 2)}
    compiled = _run(g, config, inputs)
    assert [layer.unit for layer in compiled.layers] == [LayerUnit.VECTOR]
    adds = [i for i in compiled.program.instructions if isinstance(i, Add)]
    assert adds and all(i.mul and i.multiplier_b == 0 for i in adds)
    assert all(i.b_broadcast == (a_shape != b_shape) for i in adds)


def test_mul_scales_a_convolution_per_channel():
    """A conv's map times a per-channel vector computed by another conv (the SE pattern)."""
    conv, constants = qconv("x", "a", 4, 6, seed=3)
    gate, gate_constants = qconv("g", "b", 3, 6, seed=4, kernel=1, pads=0)
    g = graph({"x": (U8, (1, 4, 5, 5)), "g": (U8, (1, 3, 1, 1))}, {"y": U8},
              [conv, gate, _mul(U8, U8, U8)], [*constants, *gate_constants])  # fmt: skip
    inputs = {"x": random_input(U8, (1, 4, 5, 5), 5), "g": random_input(U8, (1, 3, 1, 1), 6)}
    compiled = _run(g, CONFIGS["4x4"], inputs)
    assert [layer.unit for layer in compiled.layers] == [LayerUnit.ARRAY] * 2 + [LayerUnit.VECTOR]


def test_per_channel_mul_of_a_rank_3_tensor_stores_it_channel_last():
    """[N, C, W] times [1, C, 1] (a group norm's scale): the memory plan stores A and Y
    channel-last, so the channels are the lanes the broadcast row scales."""
    g = graph({"a": (U8, (2, 5, 6)), "b": (U8, (1, 5, 1))}, {"y": U8}, [_mul(U8, U8, U8)])
    inputs = {"a": random_input(U8, (2, 5, 6), 7), "b": random_input(U8, (1, 5, 1), 8)}
    compiled = _run(g, CONFIGS["4x4"], inputs)
    assert compiled.layers[0].unit is LayerUnit.VECTOR
    assert compiled.program.tensor("a").strides == (30, 1, 5)


@pytest.mark.parametrize("b_shape", [(1, 5, 1), (2, 5, 1)])
@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
def test_per_row_mul_of_a_matrix_product(config, b_shape):  # type: ignore[no-untyped-def]
    """A rank-3 QMatMul result stays row-major (its rows contiguous); a per-channel B
    [N or 1, S, 1] (T5's RMS norm x * r) is one value per row, loaded repeated over the
    lanes, and the ADD reads it without b_broadcast (on the host before)."""
    product, constants = qmatmul("x", "a", 3, 21, seed=9, y_type=U8)
    g = graph({"x": (I8, (2, 5, 3)), "b": (U8, b_shape)}, {"y": U8},
              [product, _mul(U8, U8, U8)], constants)  # fmt: skip
    inputs = {"x": random_input(I8, (2, 5, 3), 7), "b": random_input(U8, b_shape, 8)}
    compiled = _run(g, config, inputs)
    assert [layer.unit for layer in compiled.layers] == [LayerUnit.ARRAY, LayerUnit.VECTOR]
    adds = [i for i in compiled.program.instructions if isinstance(i, Add)]
    assert adds and not any(i.b_broadcast for i in adds)


def test_broadcast_form():
    assert broadcast_form((2, 3, 4, 5), (2, 3, 1, 1)) == "channel"
    assert broadcast_form((2, 3, 4, 5), (1, 3, 1, 1)) == "channel"
    assert broadcast_form((2, 3, 4, 5), (2, 3, 4, 5)) is None
    assert broadcast_form((2, 3, 4, 5), (5,)) == "last"
    assert broadcast_form((2, 3, 4, 5), (1, 1, 1, 5)) == "last"
    with pytest.raises(ModelError, match="per channel"):
        broadcast_form((2, 3, 4, 5), (1, 1, 4, 5))
    with pytest.raises(ModelError, match="last axis"):
        broadcast_form((2, 3, 4, 5), (1, 3, 1, 1), per_channel=False)
