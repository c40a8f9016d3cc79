"""systolic.QMatMulInt: equals MatMulInteger with the implied zero point (128 for uint8 A, 0 for
int8) plus Bias, wrapped to int32; shapes and types checked."""

import numpy as np
import pytest

from systolic.errors import ModelError
from systolic.ir import Attrs, DataType
from systolic.reference.ops.base import TensorInfo
from systolic.reference.ops.op_matmul_integer import MatMulInteger
from systolic.reference.ops.op_systolic_qmatmulint import QMatMulInt

_OP = QMatMulInt(Attrs({}), 1, "mm")


@pytest.mark.parametrize("a_type,zero", [(np.uint8, 128), (np.int8, 0)])
def test_equals_matmul_integer_with_the_implied_zero_point(a_type, zero):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(1)
    info = np.iinfo(a_type)
    a = rng.integers(info.min, int(info.max) + 1, (2, 3, 11)).astype(a_type)
    b = rng.integers(-128, 128, (11, 5)).astype(np.int8)
    bias = rng.integers(-1000, 1000, 5).astype(np.int32)
    want = MatMulInteger(Attrs({}), 10, "m").run([a, b, np.array(zero, a_type), None])[0]
    got = _OP.run([a, b, bias])[0]
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want + bias)
    np.testing.assert_array_equal(_OP.run([a, b])[0], want)


def test_a_computed_uint8_b_has_the_implied_zero_point_too():  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(2)
    a = rng.integers(0, 256, (2, 3, 7)).astype(np.uint8)
    b = rng.integers(0, 256, (2, 7, 4)).astype(np.uint8)
    zero = np.array(128, np.uint8)
    want = MatMulInteger(Attrs({}), 10, "m").run([a, b, zero, zero])[0]
    np.testing.assert_array_equal(_OP.run([a, b])[0], want)


def test_the_bias_wraps_to_int32():  # type: ignore[no-untyped-def]
    a = np.full((1, 2), 255, np.uint8)
    b = np.full((2, 1), 127, np.int8)
    got = _OP.run([a, b, np.array([2**31 - 1], np.int32)])[0]
    assert int(got[0, 0]) == (2 * 127 * 127 + 2**31 - 1 + 2**31) % 2**32 - 2**31


def test_checks():  # type: ignore[no-untyped-def]
    a = TensorInfo(DataType.UINT8, (4, 3))
    out = _OP.infer([a, TensorInfo(DataType.INT8, (3, 2)), TensorInfo(DataType.INT32, (2,))])
    assert out[0].dtype == DataType.INT32 and out[0].shape == (4, 2)
    with pytest.raises(ModelError, match="B has element type i32; expected u8 or i8"):
        _OP.infer([a, TensorInfo(DataType.INT32, (3, 2))])
    with pytest.raises(ModelError, match="Bias must be i32"):
        _OP.infer([a, TensorInfo(DataType.INT8, (3, 2)), TensorInfo(DataType.INT32, (3,))])
    with pytest.raises(ModelError, match="must be"):
        _OP.infer([a, TensorInfo(DataType.INT8, (4, 2))])
