import numpy as np
import pytest

from systolic.errors import ModelError
from systolic.ir import DataType
from systolic.reference.ops.base import TensorInfo

from ..oracle import check_op, make_op, rng

HALVES = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.49, -3.51, 0.0, np.inf], np.float32)


@pytest.mark.parametrize("opset", [11, 22])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_round_halves_to_even(opset, dtype):
    (out,) = check_op("Round", [HALVES.astype(dtype)], opset=opset)
    assert out[:6].tolist() == [-2, -2, -0, 0, 2, 2]


def test_round_refuses_integers():
    with pytest.raises(ModelError, match=r"X has element type i32"):
        make_op("Round", {}, 11).infer([TensorInfo(DataType.INT32, (3,))])


@pytest.mark.parametrize("opset", [9, 13])
@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.int64, np.uint8])
def test_sign(opset, dtype):
    x = rng(95).integers(-5, 5, (3, 4))
    x = (x if np.dtype(dtype).kind != "u" else np.abs(x)).astype(dtype)
    check_op("Sign", [x], opset=opset)


def test_sign_of_floats_with_zero():
    x = np.array([-0.3, 0.0, 2.0, -7.0], np.float32)
    (out,) = check_op("Sign", [x], opset=13)
    assert out.tolist() == [-1, 0, 1, -1]
