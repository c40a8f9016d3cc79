import numpy as np
import pytest

from ..oracle import check_op, rng


@pytest.mark.parametrize("op_type", ["Exp", "Neg", "Sigmoid", "Sqrt", "Tanh"])
@pytest.mark.parametrize("opset", [6, 13])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unary_matches_oracle(op_type, opset, dtype):
    x = (rng(22).standard_normal((3, 4, 5)) * 4).astype(dtype)
    if op_type == "Sqrt":
        x = np.abs(x)
    check_op(op_type, [x], opset=opset)


def test_sigmoid_saturates_without_warnings():
    x = np.array([-1000.0, 0.0, 1000.0], np.float32)
    check_op("Sigmoid", [x], opset=13, expected=[np.array([0.0, 0.5, 1.0], np.float32)])


def test_neg_int8():
    check_op("Neg", [np.array([-128, -1, 0, 127], np.int8)], opset=13, known=[])
