"""Inlining local functions: any nesting depth, recursion and exponential growth refused fast."""

import time

import onnx
import pytest
from onnx import TensorProto, helper

from systolic.errors import ModelError, ResourceError
from systolic.mapper.importer import load_model_bytes
from systolic.mapper.inline_functions import MAX_NODES


def _function(name: str, calls: list[str]) -> onnx.FunctionProto:
    """Function `name`(a) -> b: a Relu when it calls nothing, else the calls in sequence."""
    if not calls:
        body = [helper.make_node("Relu", ["a"], ["b"])]
    else:
        values = ["a", *(f"t{i}" for i in range(len(calls) - 1)), "b"]
        body = [
            helper.make_node(callee, [values[i]], [values[i + 1]], domain="local")
            for i, callee in enumerate(calls)
        ]
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)]
    return helper.make_function("local", name, ["a"], ["b"], body, opsets)


def _load(functions: list[onnx.FunctionProto], entry: str):  # type: ignore[no-untyped-def]
    graph = helper.make_graph(
        [helper.make_node(entry, ["x"], ["y"], domain="local", name="call")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)]
    model = helper.make_model(graph, opset_imports=opsets, functions=functions, ir_version=10)
    return load_model_bytes(model.SerializeToString())


def test_a_deep_chain_of_calls_is_not_taken_for_recursion() -> None:
    depth = 3000
    functions = [_function(f"f{i}", [f"f{i + 1}"]) for i in range(depth)]
    functions.append(_function(f"f{depth}", []))
    start = time.perf_counter()
    model = _load(functions, "f0")
    assert time.perf_counter() - start < 30
    assert [node.op_type for node in model.graph.nodes] == ["Relu"]
    assert model.graph.nodes[0].outputs == ("y",)


def test_functions_calling_each_other_twice_are_refused_before_expanding() -> None:
    functions = [_function(f"f{i}", [f"f{i + 1}", f"f{i + 1}"]) for i in range(30)]
    functions.append(_function("f30", []))
    start = time.perf_counter()
    with pytest.raises(ResourceError, match=rf"^inlining the model's local functions would make "
                       rf"1073741824 nodes, more than the {MAX_NODES} this tool handles"):
        _load(functions, "f0")
    assert time.perf_counter() - start < 10


def test_recursion_through_another_function_is_named() -> None:
    functions = [_function("even", ["odd"]), _function("odd", ["even"])]
    with pytest.raises(ModelError, match=r"^function local.even calls itself \(through "
                       r"local.even -> local.odd -> local.even\): recursive functions cannot be "
                       r"inlined$"):
        _load(functions, "even")
