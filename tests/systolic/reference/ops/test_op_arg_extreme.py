import numpy as np
import pytest

from ..oracle import check_op, rng


@pytest.mark.parametrize("op_type", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize(("opset", "attrs"), [
    (1, {}), (11, {"axis": -1}), (11, {"axis": 1, "keepdims": 0}),
    (12, {"axis": 0, "select_last_index": 1}), (13, {"axis": 2, "select_last_index": 0}),
])
def test_arg_extreme_matches_oracle(op_type, opset, attrs):
    x = rng(71).integers(0, 3, (3, 4, 5)).astype(np.float32)  # many ties
    check_op(op_type, [x], attrs, opset=opset)


def test_argmax_int8_last_index():
    x = np.array([[1, 7, 7], [-3, -3, -5]], np.int8)
    check_op("ArgMax", [x], {"axis": 1, "select_last_index": 1}, opset=13, known=[])
