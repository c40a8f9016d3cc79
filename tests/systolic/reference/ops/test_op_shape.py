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
