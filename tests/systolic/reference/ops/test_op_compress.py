import numpy as np
import pytest

from systolic.errors import ModelError
from systolic.ir import DataType
from systolic.reference.ops.base import TensorInfo
from systolic.reference.ops.op_if import ShapeKnownWhenRunning

from ..oracle import check_op, make_op, rng

X = rng(111).standard_normal((3, 4)).astype(np.float32)


@pytest.mark.parametrize("opset", [9, 11])
@pytest.mark.parametrize(("axis", "condition"), [
    (None, [True, False, True, True, False]),
    (0, [False, True, True]),
    (1, [True, False, True]),
    (1, [False] * 4),
])
def test_compress(opset, axis, condition):
    check_op("Compress", [X, np.array(condition)], {} if axis is None else {"axis": axis},
             opset=opset, known=[1])


def test_negative_axis_from_11():
    check_op("Compress", [X, np.array([True, False, True])], {"axis": -1}, opset=11, known=[1])


def test_condition_unknown_at_compile_time_is_unsupported():
    with pytest.raises(ShapeKnownWhenRunning, match=r"depends on the condition's values"):
        make_op("Compress", {"axis": 0}, 11).infer(
            [TensorInfo(DataType.FLOAT, (3, 4)), TensorInfo(DataType.BOOL, (3,))])


def test_condition_longer_than_the_axis():
    with pytest.raises(ModelError, match=r"condition has 4 entries for an axis of 3"):
        make_op("Compress", {"axis": 0}, 11).run([X, np.ones(4, np.bool_)])
