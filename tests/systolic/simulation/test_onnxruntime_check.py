import numpy as np
import pytest

from systolic.errors import SimulationError
from systolic.simulation.onnxruntime_check import compare_outputs, run_onnxruntime


def test_compare_counts_every_element():
    ours = {"y": np.array([[1, 2, 3]], np.uint8), "z": np.array([0.5, 1.0], np.float32)}
    theirs = {"y": np.array([[1, 4, 3]], np.uint8), "z": np.array([0.5, 1.25], np.float32)}
    result = compare_outputs(ours, theirs)
    assert result.max_abs_diff == 2.0  # uint8 difference without wrap-around
    assert result.elements == 5
    assert result.equal_fraction == pytest.approx(3 / 5)


def test_compare_refuses_shape_disagreement():
    with pytest.raises(SimulationError, match="onnxruntime gives shape"):
        compare_outputs({"y": np.zeros((2, 2))}, {"y": np.zeros((4,))})


def test_serialized_model_reads_its_external_data_from_base_dir(tmp_path):
    # The desaturated model (saturating_layers) is run from bytes: external data stays beside
    # the original file.
    pytest.importorskip("onnxruntime")
    onnx = pytest.importorskip("onnx")
    helper = onnx.helper
    weights = np.arange(64, dtype=np.float32).reshape(8, 8)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 8])],
        initializer=[onnx.numpy_helper.from_array(weights, "w")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.save(model, tmp_path / "m.onnx", save_as_external_data=True, location="m.data",
              size_threshold=0)  # fmt: skip
    x = np.ones((1, 8), np.float32)
    y = run_onnxruntime((tmp_path / "m.onnx").read_bytes(), {"x": x}, base_dir=tmp_path)["y"]
    np.testing.assert_array_equal(y, x @ weights)


def test_nan_on_both_sides_is_equal_and_on_one_side_an_infinite_difference():
    both = compare_outputs({"y": np.array([np.nan, 1.0])}, {"y": np.array([np.nan, 1.0])})
    assert (both.max_abs_diff, both.equal_fraction) == (0.0, 1.0)
    one = compare_outputs({"y": np.array([np.nan, 1.0])}, {"y": np.array([0.0, 1.0])})
    assert (one.max_abs_diff, one.equal_fraction) == (np.inf, 0.5)
