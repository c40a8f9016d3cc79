import numpy as np
import pytest

from ..oracle import check_op

DATA = np.array([[0.0, np.nan, -np.inf], [np.inf, -1.5, np.nan]])


@pytest.mark.parametrize("opset", [9, 13, 20])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_isnan(opset, dtype):
    check_op("IsNaN", [DATA.astype(dtype)], opset=opset)


def test_isnan_folds_known_values():
    check_op("IsNaN", [DATA.astype(np.float32)], opset=13, known=[0])
