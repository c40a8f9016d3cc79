import numpy as np
import pytest

from ..oracle import check_op, rng


@pytest.mark.parametrize("opset", [6, 13, 14])
def test_relu_matches_oracle(opset):
    check_op("Relu", [rng(24).standard_normal((2, 3, 4)).astype(np.float32)], opset=opset)


def test_relu_int8():
    check_op("Relu", [np.array([-128, -1, 0, 5], np.int8)], opset=14, known=[])
