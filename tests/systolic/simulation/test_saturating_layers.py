"""Which layers of a model saturate on onnxruntime without VNNI, and the model rewritten so
that they cannot: onnxruntime then gives the exact (reference) outputs on every CPU."""

from pathlib import Path

import numpy as np
import pytest

from systolic.ir import Attrs, Node
from systolic.mapper.importer import load_model, load_model_bytes
from systolic.reference.executor import run_model
from systolic.simulation.onnxruntime_check import run_onnxruntime
from systolic.simulation.onnxruntime_saturation import onnxruntime_saturates
from systolic.simulation.saturating_layers import (
    desaturated_model,
    node_overflows,
    saturating_layers,
)

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
helper, numpy_helper = onnx.helper, onnx.numpy_helper

MODELS = Path(__file__).parents[2] / "models"


def _inputs(network: str, index: int = 0) -> dict[str, np.ndarray]:
    return {"input": np.load(MODELS / f"{network}_inputs.npz")[f"input_{index}"]}


def test_qoperator_layers_on_the_committed_input():
    model = load_model(MODELS / "lenet_qop.onnx")
    layers = saturating_layers(model, _inputs("lenet"))
    assert [layer.name for layer in layers] == [
        "conv1_Conv_quant", "conv2_Conv_quant", "fc1_Gemm_quant"]  # fmt: skip
    first_outputs = {node.label: node.outputs[0] for node in model.graph.nodes}
    assert all(layer.reader == first_outputs[layer.name] for layer in layers)
    conv1 = layers[0]
    assert conv1.weight.dtype == np.uint8 and conv1.zero_point.dtype == np.uint8
    assert (conv1.weight_input, conv1.zero_point_input) == (3, 5)
    np.testing.assert_array_equal(conv1.zero_point, 128)  # symmetric int8 weights, zero point 0


def test_qdq_groups_count_only_when_onnxruntime_fuses_them():
    model = load_model(MODELS / "lenet_qdq.onnx")
    fused = saturating_layers(model, _inputs("lenet"))
    assert [layer.name for layer in fused] == ["conv1_Conv", "conv2_Conv", "fc1_Gemm"]
    assert {(layer.weight_input, layer.zero_point_input) for layer in fused} == {(0, 2)}
    assert saturating_layers(model, _inputs("lenet"), fused=False) == []  # float Conv, Gemm


def test_only_uint8_by_int8_products_count():
    a = np.full((1, 2), 255, np.uint8)
    node = Node("MatMulInteger", ("a", "b"), ("y",), attrs=Attrs())
    assert node_overflows(node, [a, np.full((2, 1), -128, np.int8)])
    assert not node_overflows(node, [a, np.full((2, 1), 255, np.uint8)])
    assert not node_overflows(node, [a.view(np.int8), np.full((2, 1), -128, np.int8)])
    assert not node_overflows(Node("MatMul", ("a", "b"), ("y",)), [a, a.T])


def _matmul_integer_model(b: np.ndarray) -> bytes:
    """MatMulInteger of a uint8 input `a` [1, K] by the int8 initializer `b`, no zero points."""
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["a", "b"], ["y"], name="mm")], "g",
        [helper.make_tensor_value_info("a", onnx.TensorProto.UINT8, [1, b.shape[0]])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.INT32, [1, b.shape[1]])],
        initializer=[numpy_helper.from_array(b, "b")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    return model.SerializeToString()


def test_a_missing_zero_point_is_added():
    data = _matmul_integer_model(np.full((4, 2), -128, np.int8))
    feeds = {"a": np.full((1, 4), 255, np.uint8)}
    (layer,) = saturating_layers(load_model_bytes(data), feeds)
    rewritten = onnx.load_from_string(desaturated_model(data, [layer]))
    (node,) = rewritten.graph.node
    assert list(node.input) == ["a", "y_weight_uint8", "", "y_zero_point_uint8"]
    assert {t.name for t in rewritten.graph.initializer} == {
        "b", "y_weight_uint8", "y_zero_point_uint8"}  # fmt: skip
    np.testing.assert_array_equal(run_onnxruntime(desaturated_model(data, [layer]), feeds)["y"],
                                  np.full((1, 2), 4 * 255 * -128))  # fmt: skip
    saturated = run_onnxruntime(data, feeds)["y"]
    assert np.array_equal(saturated, np.full((1, 2), 2 * -32768)) == onnxruntime_saturates()


@pytest.mark.parametrize("name", ["lenet_qop", "resnet_tiny_qop", "mlp_qdq", "dwsep_qdq"])
def test_desaturated_model_gives_the_reference_outputs(name: str):
    network = name.rsplit("_", 1)[0]
    path = MODELS / f"{name}.onnx"
    model = load_model(path)
    for index in range(2):
        inputs = _inputs(network, index)
        layers = saturating_layers(model, inputs)
        exact = run_onnxruntime(desaturated_model(path.read_bytes(), layers), inputs)["output"]
        np.testing.assert_array_equal(exact, run_model(model, inputs)["output"])
