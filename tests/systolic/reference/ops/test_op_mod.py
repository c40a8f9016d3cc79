import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import check_op, make_op

A = np.array([[7, -7, 5], [-5, 0, 9]])
B = np.array([3, 3, -2])


@pytest.mark.parametrize("opset", [10, 13])
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int8])
def test_mod_takes_the_divisors_sign(opset, dtype):
    check_op("Mod", [A.astype(dtype), B.astype(dtype)], opset=opset)


@pytest.mark.parametrize("dtype", [np.int64, np.float32])
def test_fmod_takes_the_dividends_sign(dtype):
    check_op("Mod", [A.astype(dtype), B.astype(dtype)], {"fmod": 1}, opset=13)


def test_mod_folds_window_padding_arithmetic():
    """Swin's (window - H % window) % window on shape values: folded to a constant."""
    check_op("Mod", [np.array([16, 21], np.int64), np.array([7], np.int64)], opset=13,
             known=[0, 1])


def test_float_mod_needs_fmod():
    with pytest.raises(ModelError, match="a float Mod needs fmod=1"):
        check_op("Mod", [A.astype(np.float32), B.astype(np.float32)], opset=13)


def test_integer_division_by_zero_is_named():
    with pytest.raises(ModelError, match="integer division by zero"):
        make_op("Mod", {}, 13).run([A, np.array([1, 0, 2])])
