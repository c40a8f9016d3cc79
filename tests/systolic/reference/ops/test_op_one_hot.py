import numpy as np
import pytest

from systolic.errors import ModelError, UnsupportedError
from systolic.ir import DataType
from systolic.reference.ops.base import TensorInfo

from ..oracle import check_op, make_op

INDICES = np.array([[0, 3, 1], [2, 4, 0]], np.int64)
VALUES = np.array([-1.0, 2.5], np.float32)


@pytest.mark.parametrize("opset", [9, 11])
@pytest.mark.parametrize("axis", [-1, 0, 1, 2, -3])
def test_one_hot(opset, axis):
    check_op("OneHot", [INDICES, np.array(5, np.int64), VALUES], {"axis": axis}, opset=opset,
             known=[0, 1])


def test_depth_as_a_one_element_vector():
    """The spec allows depth of shape [1]; onnx's ReferenceEvaluator does not (numpy 2)."""
    (scalar,) = check_op("OneHot", [INDICES, np.array(5, np.int64), VALUES], opset=11)
    check_op("OneHot", [INDICES, np.array([5], np.int64), VALUES], opset=11,
             expected=[scalar])


def test_negative_and_out_of_range_indices():
    indices = np.array([-1, -5, 5, 7, 2], np.int64)
    (out,) = check_op("OneHot", [indices, np.array(5.0, np.float32), VALUES.astype(np.int32)],
                      opset=11, known=[1])
    assert out[0].tolist() == [-1, -1, -1, -1, 2] and out[2].tolist() == [-1] * 5


def test_float_indices_are_cast_to_int64():
    """The spec casts non-integer indices to int64 (1.7 -> 1); onnx's ReferenceEvaluator
    compares the floats themselves and gives all-off rows, so the expected rows are written
    out."""
    check_op("OneHot", [np.array([1.7, 0.2], np.float32), np.array(3.0, np.float32),
                        np.array([0, 1], np.int64)], opset=11, known=[1],
             expected=[np.array([[0, 1, 0], [1, 0, 0]], np.int64)])


def test_depth_unknown_at_compile_time_is_unsupported():
    op = make_op("OneHot", {}, 11)
    with pytest.raises(UnsupportedError, match=r"depth is computed at run time"):
        op.infer([TensorInfo(DataType.INT64, (2,)), TensorInfo(DataType.INT64, (1,)),
                  TensorInfo(DataType.FLOAT, (2,))])


@pytest.mark.parametrize(("depth", "values", "message"), [
    (np.array([0], np.int64), VALUES, r"depth must be positive, got 0"),
    (np.array([4], np.int64), np.zeros(3, np.float32), r"values must hold \[off, on\]"),
])
def test_bad_depth_or_values(depth, values, message):
    op = make_op("OneHot", {}, 11)
    with pytest.raises(ModelError, match=message):
        op.infer([TensorInfo(DataType.INT64, (2,)), TensorInfo(DataType.INT64, (1,), depth),
                  TensorInfo(DataType.FLOAT, values.shape)])
