import numpy as np
import pytest

from systolic.errors import ModelError
from systolic.ir import DataType
from systolic.reference.ops.base import TensorInfo

from ..oracle import check_op, make_op, rng

DATA = rng(97).standard_normal((2, 3, 4)).astype(np.float32)
OPS = ["ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp"]


@pytest.mark.parametrize("op_type", OPS)
@pytest.mark.parametrize("opset", [1, 11, 13])
@pytest.mark.parametrize("axes", [None, [1], [0, -1]])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_axes_attribute(op_type, opset, axes, keepdims):
    if opset == 1 and axes == [0, -1]:
        axes = [0, 2]
    attrs = {"keepdims": keepdims} | ({"axes": axes} if axes else {})
    check_op(op_type, [DATA], attrs, opset=opset)


@pytest.mark.parametrize("op_type", [*OPS, "ReduceLogSum"])
@pytest.mark.parametrize("axes", [None, [1], [-1, 0]])
def test_axes_input(op_type, axes):
    x = np.abs(DATA) if op_type == "ReduceLogSum" else DATA
    inputs = [x] if axes is None else [x, np.array(axes, np.int64)]
    check_op(op_type, inputs, {"keepdims": 1}, opset=18)


def test_log_sum_of_positive_values():
    check_op("ReduceLogSum", [np.abs(DATA) + 0.1], {"axes": [2]}, opset=13)


def test_log_sum_exp_does_not_overflow():
    big = np.array([[1000.0, 1000.0], [-1000.0, 0.0]], np.float32)
    (out,) = check_op("ReduceLogSumExp", [big], {"axes": [1], "keepdims": 0}, opset=13)
    np.testing.assert_allclose(out, [1000.0 + np.log(2.0), 0.0], rtol=1e-6)


def test_integers_are_exact():
    x = rng(98).integers(-20, 20, (3, 5)).astype(np.int32)
    check_op("ReduceL1", [x], {"axes": [1]}, opset=13)


def test_integer_sum_square_keeps_the_input_type():
    """The spec's output type is the input's; onnx's ReferenceEvaluator widens an int32 sum
    to int64, so the expected values are numpy's, cast back."""
    x = rng(98).integers(-20, 20, (3, 5)).astype(np.int32)
    want = (x.astype(np.int64) ** 2).sum(1, keepdims=True).astype(np.int32)
    check_op("ReduceSumSquare", [x], {"axes": [1]}, opset=13, expected=[want])


def test_sentence_embedding_normalization():
    """x / ReduceL2(x, axis=-1): the usual pooled-embedding normalization."""
    (norm,) = check_op("ReduceL2", [DATA, np.array([-1], np.int64)], {}, opset=18)
    np.testing.assert_allclose(np.linalg.norm(DATA / norm, axis=-1), 1.0, rtol=1e-6)


@pytest.mark.parametrize("op_type", [*OPS, "ReduceLogSum"])
def test_reducing_no_elements(op_type):
    """Over an empty axis: 0 for the sums and norms, -inf for the logs (onnx's empty-set
    cases)."""
    check_op(op_type, [np.zeros((2, 0, 3), np.float32), np.array([1], np.int64)], {},
             opset=18)


@pytest.mark.parametrize("op_type", [*OPS, "ReduceLogSum"])
def test_8_bit_integers_are_refused(op_type):
    with pytest.raises(ModelError, match=r"data has element type i8"):
        make_op(op_type, {}, 13).infer([TensorInfo(DataType.INT8, (2, 3))])
