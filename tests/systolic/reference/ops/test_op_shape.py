import numpy as np
import pytest

from ..oracle import check_op

X = np.zeros((2, 3, 4, 5), np.float32)


@pytest.mark.parametrize("opset", [1, 13, 15, 19, 21, 23])
def test_shape(opset):
    check_op("Shape", [X], opset=opset)


@pytest.mark.parametrize(("start", "end"), [(1, None), (0, -1), (-2, None), (-10, 10), (3, 1)])
def test_shape_start_end(start, end):
    attrs = {"start": start} if end is None else {"start": start, "end": end}
    check_op("Shape", [X], attrs, opset=15)


@pytest.mark.parametrize("opset", [1, 13, 19, 21, 23])
@pytest.mark.parametrize("x", [X, np.zeros((0, 3), np.int64), np.array(2.5, np.float32)])
def test_size(opset, x):
    check_op("Size", [x], opset=opset)
