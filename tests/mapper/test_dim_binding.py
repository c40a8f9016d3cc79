"""bind_inputs: one name, one size, checked against declared shapes."""

import pytest
from onnx import TensorProto, helper

from systolic.errors import ModelError
from systolic.ir import Model
from systolic.mapper.dim_binding import UnknownDimensionWarning, bind_inputs, bind_symbols
from systolic.mapper.importer import load_model_bytes


def _model() -> Model:
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["y"], name="add")],
        "g",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, ["N", 3]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, ["N", None]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    return load_model_bytes(proto.SerializeToString())


def test_symbols_bind_from_given_shapes() -> None:
    assert bind_symbols(_model(), {"a": (5, 3)}) == {"N": 5}


def test_binding_fixes_all_inputs_and_reinfers() -> None:
    bound = bind_inputs(_model(), {"a": (5, 3), "b": (5, 1)})
    assert [i.type.text() for i in bound.graph.inputs] == ["f32[5,3]", "f32[5,1]"]
    assert bound.graph.outputs[0].type.text() == "f32[5,3]"


def test_one_name_one_size() -> None:
    with pytest.raises(
        ModelError,
        match=r"^dimension 'N' is 5 in input 'a' but 6 in input 'b': one name stands for one size$",
    ):
        bind_inputs(_model(), {"a": (5, 3), "b": (6, 3)})


def test_input_left_unknown_is_an_error() -> None:
    with pytest.raises(
        ModelError, match=r"^input 'b' is f32\[5,\?\] after binding; give its shape"
    ):
        bind_inputs(_model(), {"a": (5, 3)})


@pytest.mark.parametrize(
    ("shapes", "match"),
    [
        ({"c": (1,)}, r"^the model has no input 'c'; its inputs are 'a', 'b'$"),
        ({"a": (5,)}, r"^input 'a' is declared f32\[N,3\] \(rank 2\) but was given shape \[5\]$"),
        ({"a": (5, 4)}, r"^input 'a' is declared f32\[N,3\] but was given shape \[5, 4\]$"),
        ({"a": (5, -3)}, r"is not a list of sizes"),
    ],
)
def test_bad_shapes_are_refused(shapes: dict[str, tuple[int, ...]], match: str) -> None:
    with pytest.raises(ModelError, match=match):
        bind_inputs(_model(), shapes)


def _paddle_model() -> Model:
    """An input declared [?, 3, ?, ?] as paddle2onnx writes it: '?' is "unknown", not a name."""
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["?", 3, "?", "?"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["?", 3, "?", "?"])],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    return load_model_bytes(proto.SerializeToString())


def test_an_unknown_named_dimension_may_take_several_sizes() -> None:
    with pytest.warns(UnknownDimensionWarning, match=r"^dimension '\?' stands for several sizes"):
        bound = bind_inputs(_paddle_model(), {"x": (1, 3, 48, 192)})
    assert bound.graph.inputs[0].type.text() == "f32[1,3,48,192]"
    assert bound.graph.outputs[0].type.text() == "f32[1,3,48,192]"


def test_an_unknown_named_dimension_of_one_size_binds_quietly() -> None:
    bound = bind_inputs(_paddle_model(), {"x": (5, 3, 5, 5)})
    assert bound.graph.outputs[0].type.text() == "f32[5,3,5,5]"
