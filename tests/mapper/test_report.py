"""The model summary's totals: MACs and parameters, whether the weights are initializers or
Constant nodes."""

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from systolic.mapper.importer import load_model_bytes
from systolic.mapper.report import model_report


def _conv(weights_as_constants: bool) -> dict:  # type: ignore[type-arg]
    r = np.random.default_rng(7)
    w = numpy_helper.from_array(r.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(r.standard_normal(4).astype(np.float32), "b")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1])]
    inits = [w, b]
    if weights_as_constants:
        nodes = [helper.make_node("Constant", [], ["w"], value=w),
                 helper.make_node("Constant", [], ["b"], value_floats=list(r.random(4))),
                 *nodes]  # fmt: skip
        inits = []
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 5, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 5, 5])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return model_report(load_model_bytes(model.SerializeToString()))["totals"]


def test_constant_node_weights_count_as_parameters() -> None:
    expected = 4 * 3 * 3 * 3 + 4
    assert _conv(weights_as_constants=False)["parameters"] == expected
    assert _conv(weights_as_constants=True)["parameters"] == expected


def test_totals_count_conv_macs() -> None:
    assert _conv(weights_as_constants=True)["macs"] == (4 * 5 * 5) * (3 * 3 * 3)
