"""The reference If against onnx's ReferenceEvaluator: conditions known from shapes and from
values, nested Ifs reading outer values, every since_version; and its inference."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from systolic.errors import ModelError
from systolic.ir import DataType
from systolic.mapper.importer import load_model_bytes
from systolic.reference.executor import make_op, run_model
from systolic.reference.ops.base import TensorInfo

from ....support.if_models import (
    branch,
    checked,
    if_of_rate,
    if_of_shape,
    if_of_values,
    nested_if,
)


def _same_as_onnx(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> None:
    ours = run_model(load_model_bytes(model.SerializeToString()), feeds)
    theirs = ReferenceEvaluator(model).run(None, feeds)
    for (name, value), expected in zip(ours.items(), theirs, strict=True):
        assert value.dtype == expected.dtype and value.shape == expected.shape, name
        # (float convolutions may sum in another order: equal to rounding)
        np.testing.assert_allclose(value, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("size", [192, 5])  # the condition true, then false
@pytest.mark.parametrize("matmul", [False, True])
def test_condition_from_the_shape(size: int, matmul: bool) -> None:
    x = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)
    _same_as_onnx(if_of_shape(size, matmul=matmul), {"x": x})


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_condition_from_the_values(sign: float) -> None:
    x = np.abs(np.random.default_rng(2).standard_normal((1, 4, 8, 8))).astype(np.float32)
    _same_as_onnx(if_of_values(), {"x": sign * x})


@pytest.mark.parametrize(("a", "b"), [(True, True), (True, False), (False, True)])
def test_nested_if(a: bool, b: bool) -> None:
    x = np.random.default_rng(3).standard_normal((2, 3)).astype(np.float32)
    _same_as_onnx(nested_if(), {"x": x, "a": np.array(a), "b": np.array(b)})


@pytest.mark.parametrize("opset", [11, 13, 16, 19, 21, 23])
def test_every_version(opset: int) -> None:
    then = branch("then", [helper.make_node("Relu", ["x"], ["t"])], "t")
    other = branch("else", [helper.make_node("Neg", ["x"], ["e"])], "e")
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
         helper.make_tensor_value_info("c", TensorProto.BOOL, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
    )  # fmt: skip
    model = checked(graph, opset)
    x = np.array([-1.0, 0.5, 2.0], np.float32)
    for cond in (True, False):
        _same_as_onnx(model, {"x": x, "c": np.array([cond])})


def test_infer_follows_the_known_condition_and_checks_it_is_one_bool() -> None:
    graph = load_model_bytes(if_of_shape().SerializeToString()).graph
    node = graph.nodes[-1]
    op = make_op(node, {})
    x = TensorInfo(DataType.FLOAT, (1, 3, 8, 8))
    w = graph.initializer("W")
    assert w is not None
    weights = TensorInfo(w.dtype, w.shape, w.data)
    for flag in (True, False):
        cond = TensorInfo(DataType.BOOL, (), np.array(flag))
        (y,) = op.infer([cond, x, weights])
        assert (y.dtype, y.shape) == (DataType.FLOAT, (1, 4, 8, 8))
    (y,) = op.infer([TensorInfo(DataType.BOOL, ()), x, weights])  # unknown: both agree
    assert y.shape == (1, 4, 8, 8) and y.value is None
    with pytest.raises(ModelError, match=r"cond must be one bool, got i64\[2\]"):
        op.infer([TensorInfo(DataType.INT64, (2,)), x, weights])


def test_infer_with_an_unknown_condition_takes_the_branch_that_can_run() -> None:
    graph = load_model_bytes(if_of_rate().SerializeToString()).graph
    op = make_op(graph.nodes[-1], {})
    weights = [graph.initializer(name) for name in ("W16", "W8")]
    scope = [TensorInfo(w.dtype, w.shape, w.data) for w in weights if w is not None]
    unknown = TensorInfo(DataType.BOOL, ())
    (y,) = op.infer([unknown, TensorInfo(DataType.FLOAT, (1, 8)), *scope])
    assert (y.dtype, y.shape) == (DataType.FLOAT, (1, 4))  # the else-branch rejects 8 columns
    with pytest.raises(ModelError, match=r"inner dimensions differ"):  # neither can run
        op.infer([unknown, TensorInfo(DataType.FLOAT, (1, 5)), *scope])
