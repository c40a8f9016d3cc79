import numpy as np
import pytest

from systolic.ir import DataType
from systolic.reference.ops.base import TensorInfo
from systolic.reference.ops.op_if import ShapeKnownWhenRunning

from ..oracle import check_op, make_op, rng


@pytest.mark.parametrize("opset", [9, 13])
@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 2)])
def test_nonzero_of_known_inputs(opset, shape):
    x = rng(96).integers(0, 3, shape).astype(np.int32) * 0.5
    check_op("NonZero", [x.astype(np.float32)], opset=opset, known=[0])


def test_nonzero_of_booleans_and_all_zero():
    check_op("NonZero", [np.array([[True, False], [False, True]])], opset=13)
    check_op("NonZero", [np.zeros((2, 3), np.int64)], opset=13)


def test_scalar_counts_as_one_element():
    (out,) = make_op("NonZero", {}, 13).run([np.array(5.0, np.float32)])
    assert out.shape == (1, 1) and out.tolist() == [[0]]


def test_nonzero_of_a_run_time_input_is_unsupported():
    with pytest.raises(ShapeKnownWhenRunning, match=r"output size depends on the input's values"):
        make_op("NonZero", {}, 13).infer([TensorInfo(DataType.FLOAT, (3,))])
