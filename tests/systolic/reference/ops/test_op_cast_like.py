import numpy as np
import pytest

from ..oracle import check_op

X = np.array([-2.7, -0.5, 0.0, 1.5, 3.9], np.float32)


@pytest.mark.parametrize("opset", [15, 19, 21, 23])
@pytest.mark.parametrize("target", [np.int32, np.int64, np.float64, np.float16, np.uint8])
def test_cast_like(opset, target):
    x = np.abs(X) if target is np.uint8 else X
    check_op("CastLike", [x, np.zeros(3, target)], opset=opset)


def test_integer_to_float_folds():
    check_op("CastLike", [np.array([1, -2], np.int64), np.zeros((), np.float32)], opset=15)
