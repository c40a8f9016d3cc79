import numpy as np
import pytest

from ..oracle import check_op, rng
from ..ort_oracle import run_ort


@pytest.mark.parametrize("op_type", ["Abs", "Ceil", "Erf", "Exp", "Floor", "Log", "Neg",
                                     "Reciprocal", "Sigmoid", "Sqrt", "Tanh"])
@pytest.mark.parametrize("opset", [9, 13])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unary_matches_oracle(op_type, opset, dtype):
    x = (rng(22).standard_normal((3, 4, 5)) * 4).astype(dtype)
    if op_type in ("Sqrt", "Log"):
        x = np.abs(x)
    check_op(op_type, [x], opset=opset)


def test_sigmoid_saturates_without_warnings():
    x = np.array([-1000.0, 0.0, 1000.0], np.float32)
    check_op("Sigmoid", [x], opset=13, expected=[np.array([0.0, 0.5, 1.0], np.float32)])


def test_neg_int8():
    check_op("Neg", [np.array([-128, -1, 0, 127], np.int8)], opset=13, known=[])


@pytest.mark.parametrize("op_type", ["Sin", "Cos"])
@pytest.mark.parametrize("opset", [7, 22])
def test_trigonometry_matches_oracle(op_type, opset):
    x = (rng(23).standard_normal((3, 4, 5)) * 4).astype(np.float32)
    check_op(op_type, [x], opset=opset)


def test_erf_matches_onnxruntime():
    x = (rng(24).standard_normal((4, 64)) * 3).astype(np.float32)
    check_op("Erf", [x], opset=13, expected=run_ort("Erf", [x], opset=13))


def test_abs_int8_wraps():
    x = np.array([-128, -5, 0, 7], np.int8)
    check_op("Abs", [x], opset=13, known=[], expected=[np.array([-128, 5, 0, 7], np.int8)])


def test_log_and_reciprocal_of_zero():
    x = np.array([0.0, 1.0], np.float32)
    check_op("Log", [x], opset=13, expected=[np.array([-np.inf, 0.0], np.float32)])
    check_op("Reciprocal", [x], opset=13, expected=[np.array([np.inf, 1.0], np.float32)])
