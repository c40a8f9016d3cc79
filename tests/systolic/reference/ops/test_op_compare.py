import numpy as np
import pytest

from ..oracle import check_op, rng


@pytest.mark.parametrize("op_type", ["Equal", "Less", "Greater"])
@pytest.mark.parametrize("opset", [7, 13])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64])
def test_comparison_matches_oracle(op_type, opset, dtype):
    r = rng(60)
    a = r.integers(-3, 4, (2, 3, 4)).astype(dtype)
    b = r.integers(-3, 4, (3, 1)).astype(dtype)  # broadcasts
    check_op(op_type, [a, b], opset=opset, known=[])


@pytest.mark.parametrize("op_type", ["LessOrEqual", "GreaterOrEqual"])
@pytest.mark.parametrize("opset", [12, 16])
def test_or_equal_comparison_matches_oracle(op_type, opset):
    r = rng(61)
    a = r.integers(-3, 4, (4, 5)).astype(np.float32)
    check_op(op_type, [a, a[:1] + 1], opset=opset)


def test_equal_on_bool():
    a = np.array([True, False, True])
    check_op("Equal", [a, np.array([True])], opset=19, known=[])


def test_comparison_before_opset_7_uses_broadcast_attribute():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([1, 4, 2], np.float32)
    check_op("Less", [a, b], {"broadcast": 1}, opset=1, expected=[a < b])
