"""Small ONNX models with If nodes, built with onnx.helper and accepted by the ONNX checker
(full check): a condition from the input's shape (known once shapes are), one from its
values (known only when running), one from a rate input (silero-vad's form), nested Ifs, and
branches reading outer values by name."""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["branch", "checked", "if_of_rate", "if_of_shape", "if_of_values", "nested_if"]

OPSET = 17


def branch(name: str, nodes: list[onnx.NodeProto], output: str) -> onnx.GraphProto:
    """An If branch: no inputs, one float output of unknown shape."""
    return helper.make_graph(nodes, name, [],
                             [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)])


def checked(graph: onnx.GraphProto, opset: int = OPSET) -> onnx.ModelProto:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model, full_check=True)
    return model


def _weights(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def if_of_shape(size: int = 192, *, matmul: bool = False) -> onnx.ModelProto:
    """x [1,3,8,8] -> Shape -> ReduceProd -> Equal(size) -> If: then Relu(Conv(x, W)) (or,
    with `matmul`, Relu(MatMul(x, M)): [1,3,8,8] x [8,8]), else Neg of the same layer. The
    condition is true for the default size."""
    if matmul:
        layer, weight, out_shape = "MatMul", _weights((8, 8)), [1, 3, 8, 8]
        extra: dict[str, list[int]] = {}
    else:
        layer, weight, out_shape = "Conv", _weights((4, 3, 3, 3)), [1, 4, 8, 8]
        extra = {"pads": [1, 1, 1, 1]}
    then = branch("then", [helper.make_node(layer, ["x", "W"], ["t"], name="layer", **extra),
                           helper.make_node("Relu", ["t"], ["t2"], name="relu")], "t2")
    other = branch("else", [helper.make_node(layer, ["x", "W"], ["e"], **extra),
                            helper.make_node("Neg", ["e"], ["e2"])], "e2")
    graph = helper.make_graph(
        [helper.make_node("Shape", ["x"], ["s"], name="shape"),
         helper.make_node("ReduceProd", ["s"], ["p"], keepdims=0, name="prod"),
         helper.make_node("Equal", ["p", "n"], ["c"], name="equal"),
         helper.make_node("If", ["c"], ["y"], name="choose", then_branch=then,
                          else_branch=other)],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
        [numpy_helper.from_array(weight, "W"),
         numpy_helper.from_array(np.array(size, np.int64), "n")],
    )  # fmt: skip
    return checked(graph)


def if_of_values() -> onnx.ModelProto:
    """x [1,4,8,8] -> h = Conv(x, W); c = ReduceSum(x) > 0 -> If: then Relu(h), else Neg(h):
    the condition depends on the input's values."""
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "W"], ["h"], pads=[1, 1, 1, 1], name="conv"),
         helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0, name="sum"),
         helper.make_node("Greater", ["s", "z"], ["c"], name="positive"),
         helper.make_node("If", ["c"], ["y"], name="choose",
                          then_branch=branch("then", [helper.make_node("Relu", ["h"], ["t"])],
                                             "t"),
                          else_branch=branch("else", [helper.make_node("Neg", ["h"], ["e"])],
                                             "e"))],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 8, 8])],
        [numpy_helper.from_array(_weights((3, 4, 3, 3)), "W"),
         numpy_helper.from_array(np.array(0, np.float32), "z")],
    )  # fmt: skip
    return checked(graph)


def nested_if() -> onnx.ModelProto:
    """x [2,3], a [] bool, b [] bool -> If(a): then (If(b): then x + K, else x * 2), else
    Abs(x); the inner branches read x and K of the main graph."""
    inner_then = branch("inner_then", [helper.make_node("Add", ["x", "K"], ["it"])], "it")
    inner_else = branch("inner_else", [helper.make_node("Mul", ["x", "two"], ["ie"])], "ie")
    two = helper.make_node("Constant", [], ["two"],
                           value=numpy_helper.from_array(np.array(2, np.float32)))
    outer_then = branch("outer_then", [two, helper.make_node(
        "If", ["b"], ["ot"], then_branch=inner_then, else_branch=inner_else)], "ot")
    outer_else = branch("outer_else", [helper.make_node("Abs", ["x"], ["oe"])], "oe")
    graph = helper.make_graph(
        [helper.make_node("If", ["a"], ["y"], name="outer", then_branch=outer_then,
                          else_branch=outer_else)],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("a", TensorProto.BOOL, []),
         helper.make_tensor_value_info("b", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "K")],
    )  # fmt: skip
    return checked(graph)


def if_of_rate() -> onnx.ModelProto:
    """x [1,n] float, sr [] int64 -> If(sr == 16000): then Relu(MatMul(x, W16 [8,4])), else
    MatMul(x, W8 [4,4]). Bound to n = 8 the else-branch cannot take x (silero-vad's 8 kHz
    branch given a 16 kHz frame): only the then-branch can run at that size."""
    then = branch("rate16k", [helper.make_node("MatMul", ["x", "W16"], ["t"]),
                              helper.make_node("Relu", ["t"], ["t2"])], "t2")
    other = branch("rate8k", [helper.make_node("MatMul", ["x", "W8"], ["e"])], "e")
    graph = helper.make_graph(
        [helper.make_node("Equal", ["sr", "rate"], ["c"], name="is16k"),
         helper.make_node("If", ["c"], ["y"], name="choose", then_branch=then,
                          else_branch=other)],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "n"]),
              helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [numpy_helper.from_array(_weights((8, 4)), "W16"),
         numpy_helper.from_array(_weights((4, 4), seed=1), "W8"),
         numpy_helper.from_array(np.array(16000, np.int64), "rate")],
    )  # fmt: skip
    return checked(graph)
