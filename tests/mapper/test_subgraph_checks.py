"""If's branches through the importer: read into the IR with their outer reads as the node's
captures, checked as the IR spec scopes names (no shadowing), and bound."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from systolic.errors import ModelError
from systolic.ir import Graph
from systolic.mapper.importer import load_model_bytes
from systolic.reference.executor import run_model

from ..support.if_models import branch, checked, if_of_shape, nested_if


def _load(model: onnx.ModelProto):  # type: ignore[no-untyped-def]
    return load_model_bytes(model.SerializeToString())


def test_branches_are_graphs_and_outer_reads_are_captures() -> None:
    graph = _load(if_of_shape()).graph
    node = graph.nodes[-1]
    then, other = node.attrs["then_branch"], node.attrs["else_branch"]
    assert isinstance(then, Graph) and isinstance(other, Graph)
    assert [n.op_type for n in then.nodes] == ["Conv", "Relu"]
    assert [n.op_type for n in other.nodes] == ["Conv", "Neg"]
    assert node.captures == ("x", "W") and node.inputs == ("c", "x", "W")
    assert node.own_inputs == ("c",)
    assert all(n.version > 0 for n in (*then.nodes, *other.nodes))  # bound
    assert graph.type_of("y").text() == "f32[1,4,8,8]"  # the chosen (then) branch's type


def test_nested_if_captures_what_the_inner_branches_read() -> None:
    node = _load(nested_if()).graph.nodes[0]
    # (attributes in name order: else_branch's reads first)
    assert node.inputs == ("a", "x", "b", "K")
    inner = node.attrs["then_branch"].nodes[1]  # type: ignore[union-attr]
    assert inner.op_type == "If" and inner.inputs == ("b", "x", "two", "K")


def _shadowing(name: str) -> onnx.ModelProto:
    then = branch("then", [helper.make_node("Relu", ["x"], [name], name="inner")], name)
    other = branch("else", [helper.make_node("Neg", ["x"], ["e"])], "e")
    graph = helper.make_graph(
        [helper.make_node("Abs", ["x"], ["a"]),
         helper.make_node("If", ["c"], ["y"], name="if", then_branch=then, else_branch=other)],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
              helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("name", ["a", "x"])
def test_a_branch_output_shadowing_an_outer_name_is_refused(name: str) -> None:
    with pytest.raises(ModelError, match=(
            rf"^node 'inner' \(Relu\) in the then_branch of node 'if' \(If\) assigns "
            rf"'{name}', a name of an outer graph; .* must not shadow outer names")):
        _load(_shadowing(name))


def test_a_branch_reading_an_undefined_name_is_refused() -> None:
    then = branch("then", [helper.make_node("Relu", ["nowhere"], ["t"])], "t")
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], name="if", then_branch=then, else_branch=then)],
        "g", [helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ModelError, match=r"^node 'if' \(If\) reads 'nowhere', which is not "
                       "defined"):
        _load(model)


def test_a_branch_with_inputs_is_refused() -> None:
    then = helper.make_graph([helper.make_node("Relu", ["i"], ["t"])], "then",
                             [helper.make_tensor_value_info("i", TensorProto.FLOAT, [2])],
                             [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2])])
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], name="if", then_branch=then, else_branch=then)],
        "g", [helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ModelError, match=r"^attribute '(then|else)_branch' of node 'if' \(If\) "
                       r"declares 1 input\(s\); an If branch takes none"):
        _load(model)


def _disagreeing(other_node: onnx.NodeProto) -> onnx.ModelProto:
    then = branch("then", [helper.make_node("Relu", ["x"], ["t"])], "t")
    other = branch("else", [other_node], "e")
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], name="if", then_branch=then, else_branch=other)],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
              helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None])],
    )  # fmt: skip
    return checked(graph)


def test_branches_of_other_ranks_when_cond_is_unknown_are_refused() -> None:
    model = _disagreeing(helper.make_node("Flatten", ["x"], ["e"], axis=1))
    with pytest.raises(ModelError, match=r"output 0 is f32\[2\] in then_branch but f32\[2, 1\] "
                       "in else_branch, and cond is known only when running: the branches must "
                       "agree on type and rank"):
        _load(model)


def test_branches_of_other_sizes_keep_the_declared_type() -> None:
    model = _load(_disagreeing(helper.make_node("Concat", ["x", "x"], ["e"], axis=0)))
    assert model.graph.type_of("y").text() == "f32[?]"  # type: ignore[union-attr]
    x = np.array([-1.0, 2.0], np.float32)
    for cond, expected in ((True, [0.0, 2.0]), (False, [-1.0, 2.0, -1.0, 2.0])):
        result = run_model(model, {"x": x, "c": np.array(cond)})["y"]
        np.testing.assert_array_equal(result, np.array(expected, np.float32))


def test_an_if_in_a_local_function_reads_the_callers_values() -> None:
    then = branch("then", [helper.make_node("Relu", ["a"], ["t"])], "t")
    other = branch("else", [helper.make_node("Neg", ["a"], ["e"])], "e")
    function = helper.make_function(
        "local", "Pick", ["a", "c"], ["o"],
        [helper.make_node("If", ["c"], ["o"], then_branch=then, else_branch=other)],
        [helper.make_opsetid("", 17)])  # fmt: skip
    graph = helper.make_graph(
        [helper.make_node("Pick", ["x", "c"], ["y"], domain="local")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
         helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
    )  # fmt: skip
    proto = helper.make_model(graph, functions=[function], opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("local", 1)])
    onnx.checker.check_model(proto, full_check=True)
    model = _load(proto)
    assert model.graph.nodes[0].inputs == ("c", "x")  # the branches' 'a' is the caller's x
    x = np.array([-1.0, 2.0, -3.0], np.float32)
    for cond, expected in ((True, np.maximum(x, 0)), (False, -x)):
        result = run_model(model, {"x": x, "c": np.array(cond)})["y"]
        np.testing.assert_array_equal(result, expected)


def test_a_branch_initializer_named_like_an_outer_value_is_refused() -> None:
    """(onnxruntime and onnx's ReferenceEvaluator read the outer value when the outer graph
    uses it; onnxruntime reads the branch's own when it drops the outer one as unused.)"""
    own = numpy_helper.from_array(np.full(2, 10, np.float32), "k")
    then = helper.make_graph([helper.make_node("Add", ["x", "k"], ["t"])], "then", [],
                             [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)], [own])
    other = branch("else", [helper.make_node("Sub", ["x", "k"], ["e"])], "e")
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], name="if", then_branch=then, else_branch=other)],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
              helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        [numpy_helper.from_array(np.ones(2, np.float32), "k")],
    )  # fmt: skip
    with pytest.raises(ModelError, match=r"^initializer 'k' of the then_branch of node 'if' "
                       r"\(If\) has the name of an outer value, and runtimes disagree"):
        _load(checked(graph))
