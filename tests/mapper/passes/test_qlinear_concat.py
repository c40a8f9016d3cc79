"""com.microsoft QLinearConcat: requantizing tables and a Concat of 8-bit values."""

import dataclasses

import numpy as np
import pytest

from systolic.ir import DataType, TensorType, ValueInfo
from systolic.mapper.passes.pipeline import run_passes
from systolic.reference.executor import run_model

from .table_models import make, node, op_types
from .test_normalize_qoperator_tables import ort_run

SHAPES = ((1, 3, 4, 4), (1, 5, 4, 4), (1, 2, 4, 4))


def concat_model(scales, zero_points, dtype=np.uint8):
    """QLinearConcat over axis 1 of three inputs with the given (scale, zero point) each; the
    output's are (0.05, 10)."""
    constants = {"ys": np.float32(0.05), "yz": dtype(10)}
    inputs = ["ys", "yz"]
    for index, (scale, zero_point) in enumerate(zip(scales, zero_points, strict=True)):
        constants[f"s{index}"], constants[f"z{index}"] = np.float32(scale), dtype(zero_point)
        inputs += [f"x{index}", f"s{index}", f"z{index}"]
    nodes = [node("QLinearConcat", inputs, ["y"], domain="com.microsoft", name="cat", axis=1)]
    graph_inputs = [(f"x{i}", dtype, list(shape)) for i, shape in enumerate(SHAPES)]
    return make(nodes, graph_inputs, [("y", dtype, [1, 10, 4, 4])], constants, opset=13,
                ms=True)


def feed_of(dtype=np.uint8):
    info = np.iinfo(dtype)
    r = np.random.default_rng(4)
    return {f"x{i}": r.integers(info.min, info.max + 1, shape).astype(dtype)
            for i, shape in enumerate(SHAPES)}


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_inputs_with_other_parameters_are_requantized_by_tables(dtype):
    proto, model = concat_model((0.05, 0.02, 0.11), (10, 128 if dtype == np.uint8 else 0, 3),
                                dtype)
    fused, report = run_passes(model)
    assert op_types(fused) == ["QTable", "QTable", "Concat"]  # input 0 shares the output's
    assert report.fate("cat").into.startswith("2 systolic.QTable and Concat")
    feed = feed_of(dtype)
    got = run_model(fused, feed)["y"]
    np.testing.assert_array_equal(got, run_model(model, feed)["y"])  # bit-exact
    np.testing.assert_array_equal(got, ort_run(proto, feed))  # onnxruntime's tables agree


def test_equal_parameters_need_no_table():
    _, model = concat_model((0.05, 0.05, 0.05), (10, 10, 10))
    fused, _ = run_passes(model)
    assert op_types(fused) == ["Concat"]
    feed = feed_of()
    np.testing.assert_array_equal(run_model(fused, feed)["y"], run_model(model, feed)["y"])


def test_a_scale_given_as_a_graph_input_stays_on_the_host():
    _, model = concat_model((0.05, 0.02, 0.11), (10, 128, 3))
    graph = model.graph
    graph = dataclasses.replace(
        graph, initializers=tuple(t for t in graph.initializers if t.name != "s1"),
        inputs=(*graph.inputs, ValueInfo("s1", TensorType(DataType.FLOAT, ()))))
    fused, report = run_passes(dataclasses.replace(model, graph=graph))
    assert op_types(fused) == ["QLinearConcat"]
    assert "constant" in report.fate("cat").reason
