"""row_fold: a QAdd or QMul whose rows are longer than a spad_in quarter runs on the same pixels
seen as shorter rows (it was refused: "an image row of N pixels does not fit a quarter"),
equal to the reference on the golden machine."""

import numpy as np
import pytest

from systolic.config import ArrayConfig
from systolic.ir import DataType
from systolic.isa.instructions import Add
from systolic.isa.program import LayerUnit
from systolic.mapper.lowering import compile_model
from systolic.mapper.lowering.feature_map import FeatureMap
from systolic.mapper.lowering.row_fold import fold_long_rows
from systolic.reference.executor import run_graph
from systolic.simulation.layer_check import check_layers
from systolic.simulation.runner import simulate

from .graphs import OPSETS, graph, node, random_input

U8 = DataType.UINT8
TINY = ArrayConfig(rows=2, cols=3, spad_kib=1)  # spad_in quarters of 42 rows


def _map(height, width, row_stride=None):  # type: ignore[no-untyped-def]
    return FeatureMap((0, 1000), height, width, 3, width * 3 if row_stride is None
                      else row_stride, 3, 1)


def test_rows_fold_to_the_widest_divisor_with_the_same_addresses():  # type: ignore[no-untyped-def]
    (folded,) = fold_long_rows([_map(2, 90)], 32)
    assert (folded.height, folded.width) == (6, 30)
    old, new = _map(2, 90), folded
    assert [new.pixel(1, y, x, 2) for y in range(6) for x in range(30)] == \
        [old.pixel(1, y, x, 2) for y in range(2) for x in range(90)]


@pytest.mark.parametrize("maps", [[_map(1, 20)], [_map(2, 90, row_stride=300)],
                                  [_map(1, 90), _map(1, 60)]],
                         ids=["fits", "rows-apart", "two-geometries"])
def test_other_maps_are_not_folded(maps):  # type: ignore[no-untyped-def]
    assert fold_long_rows(maps, 32) is None


def _op(op_type):  # type: ignore[no-untyped-def]
    attrs = {"a_zero_point": 9, "b_zero_point": 200, "shift": -1, "y_zero_point": 128,
             "y_type": int(U8)}
    if op_type == "QAdd":
        attrs.update(multiplier_a=1_518_500_250, multiplier_b=-1_073_741_824)
    else:
        attrs.update(multiplier=1_518_500_250, shift=-6)
    return node(op_type, ["a", "b"], "y", **attrs)


@pytest.mark.parametrize("op_type", ["QAdd", "QMul"])
@pytest.mark.parametrize("shape", [(1, 5, 2, 75), (2, 4, 1, 89)], ids=["75", "prime-89"])
def test_a_long_row_runs_equal_to_the_reference(op_type, shape):  # type: ignore[no-untyped-def]
    g = graph({"a": (U8, shape), "b": (U8, shape)}, {"y": U8}, [_op(op_type)])
    compiled = compile_model(g, TINY)
    assert compiled.program.tensor("y").strides[-1] == shape[1]  # channel-last: rows of W pixels
    assert [layer.unit for layer in compiled.layers] == [LayerUnit.VECTOR]
    inputs = {"a": random_input(U8, shape, 1), "b": random_input(U8, shape, 2)}
    assert check_layers(compiled, inputs) is None
    expected = run_graph(compiled.graph, inputs, opsets=OPSETS)["y"]
    np.testing.assert_array_equal(simulate(compiled, inputs)["y"], expected)
    adds = [i for i in compiled.program.instructions if isinstance(i, Add)]
    quarter = adds[0].b_row - adds[0].a_row
    assert quarter < shape[-1] and all(a.m <= quarter for a in adds)


def test_without_the_fold_such_a_row_is_refused(monkeypatch):  # type: ignore[no-untyped-def]
    from systolic.mapper.lowering import add
    monkeypatch.setattr(add, "fold_long_rows", lambda maps, quarter: None)
    g = graph({"a": (U8, (1, 5, 2, 75)), "b": (U8, (1, 5, 2, 75))}, {"y": U8}, [_op("QAdd")])
    (layer,) = compile_model(g, TINY).layers
    assert layer.unit == LayerUnit.HOST and "does not fit a quarter" in layer.reason


@pytest.mark.parametrize("op_type", ["QAdd", "QMul"])
def test_a_long_row_with_a_per_channel_b(op_type):  # type: ignore[no-untyped-def]
    shape, b_shape = (1, 5, 1, 75), (1, 5, 1, 1)
    g = graph({"a": (U8, shape), "b": (U8, b_shape)}, {"y": U8}, [_op(op_type)])
    compiled = compile_model(g, TINY)
    assert [layer.unit for layer in compiled.layers] == [LayerUnit.VECTOR]
    inputs = {"a": random_input(U8, shape, 3), "b": random_input(U8, b_shape, 4)}
    assert check_layers(compiled, inputs) is None
    expected = run_graph(compiled.graph, inputs, opsets=OPSETS)["y"]
    np.testing.assert_array_equal(simulate(compiled, inputs)["y"], expected)
