import numpy as np
import pytest

from systolic.errors import ModelError
from systolic.ir import DataType
from systolic.reference.ops.base import TensorInfo

from ..oracle import check_op, make_op, rng

R = rng(109)


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64])
def test_bitshift(direction, dtype):
    x = R.integers(0, 200, (3, 4)).astype(dtype)
    y = R.integers(0, 8, (4,)).astype(dtype)
    check_op("BitShift", [x, y], {"direction": direction}, opset=11)


def test_bitshift_loses_bits_shifted_out():
    x = np.array([0x81, 0xFF, 1], np.uint8)
    (out,) = make_op("BitShift", {"direction": "LEFT"}, 11).run(
        [x, np.array([1, 4, 8], np.uint8)])
    assert out.tolist() == [0x02, 0xF0, 0]


def test_bitshift_refuses_signed_and_bad_direction():
    with pytest.raises(ModelError, match=r"A has element type i32"):
        make_op("BitShift", {"direction": "LEFT"}, 11).infer(
            [TensorInfo(DataType.INT32, (2,)), TensorInfo(DataType.INT32, (2,))])
    with pytest.raises(ModelError, match=r"direction must be 'LEFT' or 'RIGHT'"):
        make_op("BitShift", {"direction": "UP"}, 11)


@pytest.mark.parametrize("op_type", ["BitwiseAnd", "BitwiseOr", "BitwiseXor"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64, np.uint64])
def test_bitwise_binary(op_type, dtype):
    lo = 0 if np.dtype(dtype).kind == "u" else -100
    a = R.integers(lo, 100, (2, 3)).astype(dtype)
    b = R.integers(lo, 100, (3,)).astype(dtype)
    check_op(op_type, [a, b], opset=18)


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int64])
def test_bitwise_not(dtype):
    lo = 0 if np.dtype(dtype).kind == "u" else -100
    check_op("BitwiseNot", [R.integers(lo, 100, (5,)).astype(dtype)], opset=18)


def test_bitwise_refuses_floats():
    with pytest.raises(ModelError, match=r"A has element type f32"):
        make_op("BitwiseAnd", {}, 18).infer(
            [TensorInfo(DataType.FLOAT, (2,)), TensorInfo(DataType.FLOAT, (2,))])
