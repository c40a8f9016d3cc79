"""Forms real exporters write that onnxruntime and onnx.checker accept (issue 13): the
importer reads them instead of refusing the model."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from systolic.errors import UnsupportedError
from systolic.mapper.importer import bind_inputs, load_model_bytes


def _conv_model(x_shape: list[int | str], opsets: list[tuple[str, int]],
                nodes_domain: str = "") -> onnx.ModelProto:  # fmt: skip
    weights = np.random.default_rng(3).standard_normal((4, 3, 3, 3)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], domain=nodes_domain)],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4, "h", "w"])],
        initializer=[numpy_helper.from_array(weights, "w")],
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets], ir_version=8
    )


def test_unused_opset_domain_is_left_out() -> None:
    proto = _conv_model([1, 3, 4, 4], [("", 13), ("ai.onnx.ml", 3)])
    onnx.checker.check_model(proto, full_check=True)
    model = load_model_bytes(proto.SerializeToString())
    assert model.opsets == (("", 13),)
    assert model.graph.type_of("y").text() == "f32[1,4,4,4]"


def test_used_unknown_domain_is_still_refused() -> None:
    proto = _conv_model([1, 3, 4, 4], [("", 13), ("ai.onnx.ml", 3)], nodes_domain="ai.onnx.ml")
    with pytest.raises(UnsupportedError, match=r"^model imports opset domain 'ai\.onnx\.ml' "
                                               r"\(version 3\), which this tool does not "):
        load_model_bytes(proto.SerializeToString())


def test_minus_one_dimensions_are_unknown_until_bound() -> None:
    proto = _conv_model([-1, 3, -1, -1], [("", 13)])
    model = load_model_bytes(proto.SerializeToString())
    assert model.graph.inputs[0].type.text() == "f32[?,3,?,?]"
    bound = bind_inputs(model, {"x": (2, 3, 5, 7)})
    assert bound.graph.type_of("y").text() == "f32[2,4,5,7]"
