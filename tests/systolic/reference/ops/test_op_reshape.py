import numpy as np
import pytest

from systolic.errors import ModelError, UnsupportedError

from ..oracle import check_op, make_op, rng

X = rng(42).standard_normal((2, 3, 4)).astype(np.float32)


@pytest.mark.parametrize("opset", [5, 13, 14, 19, 21, 23])
@pytest.mark.parametrize("shape", [[4, 6], [0, -1], [-1], [2, 0, 2, 2], [1, 24, 1]])
def test_reshape_input(opset, shape):
    check_op("Reshape", [X, np.array(shape, np.int64)], opset=opset)


def test_reshape_attribute_version_1():
    check_op("Reshape", [X], {"shape": [0, 12]}, opset=1, expected=[X.reshape(2, 12)])


def test_reshape_allowzero():
    empty = np.zeros((0, 3), np.float32)
    check_op("Reshape", [empty, np.array([3, 0], np.int64)], {"allowzero": 1}, opset=14)


@pytest.mark.parametrize(("shape", "message"), [
    ([5, -1], r"cannot reshape \[2, 3, 4\] to \[5, -1\]"),
    ([-1, -1], r"more than one -1"),
    ([7, 7], r"cannot reshape \[2, 3, 4\] \(24 elements\) to \[7, 7\]"),
])
def test_reshape_errors(shape, message):
    with pytest.raises(ModelError, match=message):
        make_op("Reshape", {}, 14).run([X, np.array(shape, np.int64)])


def test_reshape_unknown_shape_is_unsupported():
    from systolic.ir import DataType
    from systolic.reference.ops.base import TensorInfo

    op = make_op("Reshape", {}, 14)
    with pytest.raises(UnsupportedError, match=r"the shape input is computed at run time"):
        op.infer([TensorInfo(DataType.FLOAT, (2, 3, 4)), TensorInfo(DataType.INT64, (2,))])
