import numpy as np
import pytest

from ..oracle import check_op, rng


@pytest.mark.parametrize("opset", [1, 9, 11, 13, 21, 23])
@pytest.mark.parametrize("axis", [0, 1, 2, 4])
def test_flatten(opset, axis):
    check_op("Flatten", [rng(40).standard_normal((2, 3, 4, 5)).astype(np.float32)],
             {"axis": axis}, opset=opset)


@pytest.mark.parametrize("axis", [-1, -4])
def test_flatten_negative_axis(axis):
    check_op("Flatten", [rng(41).standard_normal((2, 3, 4, 5)).astype(np.float32)],
             {"axis": axis}, opset=13)

