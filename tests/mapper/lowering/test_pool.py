"""QMaxPool / QAveragePool lowered to LOAD + POOL, on the golden machine against the
reference operators, bit for bit."""

import numpy as np
import pytest

from systolic.config import ArrayConfig, Dataflow
from systolic.ir import DataType
from systolic.isa.instructions import Pool
from systolic.isa.program import LayerUnit
from systolic.mapper.lowering import compile_model
from systolic.mapper.lowering.pool import count_rectangles
from systolic.reference.executor import run_graph
from systolic.simulation.layer_check import check_layers
from systolic.simulation.runner import simulate

from .graphs import OPSETS, graph, node, random_input

U8, I8 = DataType.UINT8, DataType.INT8

CONFIGS = {
    "4x4": ArrayConfig(rows=4, cols=4),
    "8x8-os": ArrayConfig(rows=8, cols=8, dataflow=Dataflow.OS),
    "4x4-tiny-spad": ArrayConfig(rows=4, cols=4, spad_kib=1),  # forces row tiles
}

# (op, input shape, attributes)
CASES = {
    "max-2x2": ("QMaxPool", (1, 6, 8, 8), {"kernel_shape": (2, 2), "strides": (2, 2)}),
    "max-3x3-pads": (
        "QMaxPool",
        (2, 5, 9, 7),
        {"kernel_shape": (3, 3), "strides": (2, 2), "pads": (1, 1, 1, 1), "clamp": True},
    ),
    "max-ceil-folded": (
        "QMaxPool",
        (1, 3, 7, 7),
        {"kernel_shape": (2, 2), "strides": (2, 2), "pads": (0, 0, 1, 1)},
    ),
    "max-1d": ("QMaxPool", (1, 9, 11), {"kernel_shape": (3,), "strides": (2,), "pads": (1, 1)}),
    "avg-include-pad": (
        "QAveragePool",
        (1, 10, 8, 8),
        {"kernel_shape": (3, 3), "strides": (1, 1), "pads": (1, 1, 1, 1), "count_include_pad": 1},
    ),
    "avg-exclude-pad": (
        "QAveragePool",
        (1, 10, 9, 8),
        {"kernel_shape": (3, 3), "strides": (2, 2), "pads": (1, 1, 1, 1), "count_include_pad": 0},
    ),
    "avg-ceil-exclude": (
        "QAveragePool",
        (1, 3, 7, 6),
        {"kernel_shape": (2, 3), "strides": (2, 2), "pads": (0, 1, 1, 1), "count_include_pad": 0},
    ),
    "avg-ceil-include": (
        "QAveragePool",
        (1, 3, 7, 6),
        {"kernel_shape": (2, 2), "strides": (2, 2), "pads": (0, 0, 1, 0), "count_include_pad": 1},
    ),
    "global-avg": ("QAveragePool", (2, 20, 5, 6), {"kernel_shape": (5, 6)}),
}


def _pool_graph(op, shape, attrs, x_type, y_type):  # type: ignore[no-untyped-def]
    attrs = dict(attrs)
    if op == "QAveragePool":
        attrs.update(x_zero_point=7 if x_type == U8 else -3, y_zero_point=-5 if y_type == I8
                     else 131, scale=0.83, y_type=int(y_type))  # fmt: skip
    else:
        y_type = x_type
        if attrs.pop("clamp", False):
            attrs.update(y_lo=20, y_hi=200) if x_type == U8 else attrs.update(y_lo=-100, y_hi=90)
    pool = node(op, ["x"], "y", **attrs)
    return graph({"x": (x_type, shape)}, {"y": y_type}, [pool])


TYPES = {"u8": (U8, U8), "i8": (I8, I8), "u8-i8": (U8, I8)}
COMBINATIONS = {
    f"{case}-{kind}": (CASES[case], TYPES[kind])
    for case in CASES
    for kind in TYPES
    if CASES[case][0] == "QAveragePool" or kind != "u8-i8"  # max pooling keeps its type
}


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
@pytest.mark.parametrize(("case", "types"), COMBINATIONS.values(), ids=COMBINATIONS.keys())
def test_pool_matches_the_reference(config, case, types):  # type: ignore[no-untyped-def]
    op, shape, attrs = case
    g = _pool_graph(op, shape, attrs, *types)
    compiled = compile_model(g, config)
    assert [layer.unit for layer in compiled.layers] == [LayerUnit.VECTOR]
    x = random_input(types[0], shape, seed=len(shape) + shape[1])
    assert check_layers(compiled, {"x": x}) is None
    expected = run_graph(compiled.graph, {"x": x}, opsets=OPSETS)["y"]
    np.testing.assert_array_equal(simulate(compiled, {"x": x})["y"], expected)


def test_count_exclude_pad_issues_one_pool_per_border_count():
    g = _pool_graph("QAveragePool", (1, 4, 6, 6), {"kernel_shape": (3, 3), "pads": (1,) * 4,
                    "count_include_pad": 0}, U8, U8)  # fmt: skip
    compiled = compile_model(g, ArrayConfig(rows=4, cols=4))
    pools = [i for i in compiled.program.instructions if isinstance(i, Pool)]
    # corners (4 cells), edges (6 cells) and the interior (9 cells): 9 rectangles
    assert len(pools) == 9
    assert len({(p.multiplier, p.shift) for p in pools}) == 3


def test_channels_wider_than_the_array_are_chunked():
    g = _pool_graph("QMaxPool", (1, 11, 4, 4), {"kernel_shape": (2, 2), "strides": (2, 2)},
                    I8, I8)  # fmt: skip
    compiled = compile_model(g, ArrayConfig(rows=4, cols=4))
    pools = [i for i in compiled.program.instructions if isinstance(i, Pool)]
    assert [p.lanes for p in pools] == [4, 4, 3]


def test_count_rectangles_covers_each_position_once():
    counts = np.array([[4, 6, 6, 4], [6, 9, 9, 6], [6, 9, 9, 6], [4, 6, 6, 4]])
    rectangles = count_rectangles(counts)
    covered = np.zeros_like(counts)
    for y0, y1, x0, x1, count in rectangles:
        assert np.all(counts[y0:y1, x0:x1] == count)
        covered[y0:y1, x0:x1] += 1
    assert np.all(covered == 1)
    assert len(rectangles) == 9


def test_a_map_too_wide_for_the_scratchpad_runs_on_the_host():
    g = _pool_graph("QAveragePool", (1, 2, 40, 40), {"kernel_shape": (40, 40)}, U8, U8)
    compiled = compile_model(g, ArrayConfig(rows=4, cols=4, spad_kib=1))
    (layer,) = compiled.layers
    assert layer.unit is LayerUnit.HOST
    assert "spad_in" in layer.reason
    x = random_input(U8, (1, 2, 40, 40), seed=3)
    assert check_layers(compiled, {"x": x}) is None
