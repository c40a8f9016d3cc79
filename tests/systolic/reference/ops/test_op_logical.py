import numpy as np
import pytest

from ..oracle import check_op, rng


@pytest.mark.parametrize("op_type", ["And", "Or", "Xor"])
def test_logical_matches_oracle(op_type):
    r = rng(62)
    a, b = r.random((3, 4)) < 0.5, r.random((4,)) < 0.5
    check_op(op_type, [a, b], opset=7, known=[])


def test_not_matches_oracle():
    check_op("Not", [rng(63).random((3, 4)) < 0.5], opset=1, known=[])


def test_and_before_opset_7():
    a, b = rng(64).random((2, 3)) < 0.5, np.array([True, False, True])
    check_op("And", [a, b], {"broadcast": 1}, opset=1, known=[], expected=[a & b])
