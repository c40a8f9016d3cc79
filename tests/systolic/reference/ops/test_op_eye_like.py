import numpy as np
import pytest

from systolic.errors import ModelError
from systolic.ir import DataType

from ..oracle import check_op, make_op


@pytest.mark.parametrize("opset", [9, 22])
@pytest.mark.parametrize("shape", [(3, 3), (2, 5), (5, 2)])
@pytest.mark.parametrize("k", [0, 1, -2, 7])
def test_eye_like(opset, shape, k):
    check_op("EyeLike", [np.zeros(shape, np.float32)], {"k": k}, opset=opset)


@pytest.mark.parametrize("dtype", [DataType.INT64, DataType.DOUBLE, DataType.BOOL])
def test_eye_like_with_dtype(dtype):
    check_op("EyeLike", [np.zeros((3, 4), np.int32)], {"dtype": int(dtype)}, opset=22)


def test_eye_like_needs_2d():
    with pytest.raises(ModelError, match=r"input must be 2-D, got shape \[3\]"):
        make_op("EyeLike", {}, 22).run([np.zeros(3, np.float32)])
