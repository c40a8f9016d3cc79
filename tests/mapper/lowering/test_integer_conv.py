"""systolic.QConvInt lowered like QConv with STORE.raw (int32 pixels of channels, stored
channel-last), run on the golden machine against the reference executor bit for bit: uint8
and int8 X, padding filled with x_zero_point, strides, groups, 1-D and 2-D, with and without
a bias."""

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.ir import DataType, Tensor
from systolic.isa.instructions import Store
from systolic.isa.program import LayerUnit
from systolic.mapper.lowering import compile_model
from systolic.reference.executor import run_graph
from systolic.simulation.layer_check import check_layers
from systolic.simulation.runner import simulate

from .graphs import OPSETS, graph, node, random_input

U8, I8, I32 = DataType.UINT8, DataType.INT8, DataType.INT32

CONFIGS = {
    "4x4": ArrayConfig(rows=4, cols=4),
    "8x8-os": ArrayConfig(rows=8, cols=8, dataflow=Dataflow.OS),
    "16x16": ArrayConfig(rows=16, cols=16),
}

CASES = {
    "3x3-pad": {"x": (1, 5, 7, 6), "w": (6, 5, 3, 3), "pads": [1, 1, 1, 1], "strides": [1, 1],
                "group": 1},
    "stride2-group": {"x": (2, 6, 9, 8), "w": (9, 2, 3, 3), "pads": [0, 1, 1, 0],
                      "strides": [2, 2], "group": 3},
    "1x1": {"x": (1, 20, 4, 5), "w": (7, 20, 1, 1), "pads": [0, 0, 0, 0], "strides": [1, 1],
            "group": 1},
    "1d": {"x": (1, 4, 11), "w": (5, 4, 3), "pads": [1, 1], "strides": [1], "group": 1},
}


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
@pytest.mark.parametrize("x_type", [U8, I8], ids=["u8", "i8"])
def test_raw_convolution_matches_the_reference(config, case, x_type):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(3)
    w = Tensor("W", I8, rng.integers(-128, 128, case["w"]).astype(np.int8))
    b = Tensor("B", I32, rng.integers(-5000, 5000, case["w"][0]).astype(np.int32))
    zero = 37 if x_type == U8 else -9
    conv = node("QConvInt", ["x", "W", "B"], "y", pads=tuple(case["pads"]),
                strides=tuple(case["strides"]),
                group=case["group"], x_zero_point=zero)  # fmt: skip
    g = graph({"x": (x_type, case["x"])}, {"y": I32}, [conv], [w, b])
    compiled = compile_model(g, config)
    assert [layer.unit for layer in compiled.layers] == [LayerUnit.ARRAY]
    stores = [i for i in compiled.program.instructions if isinstance(i, Store)]
    assert stores and all(s.raw for s in stores)
    feed = {"x": random_input(x_type, case["x"], 4)}
    assert check_layers(compiled, feed) is None
    expected = run_graph(compiled.graph, feed, opsets=OPSETS)["y"]
    got = simulate(compiled, feed)["y"]
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, expected)
