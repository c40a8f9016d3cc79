"""systolic.QConvInt: with x_zero_point z (the padding's value) and Bias (z0 - z) * sum W it
equals ConvInteger(X, W, z) plus B (z0 = 128 for uint8 X, 0 for int8), wrapped to int32."""

import numpy as np
import pytest

from systolic.errors import ModelError
from systolic.ir import Attrs, DataType
from systolic.reference.ops.base import TensorInfo
from systolic.reference.ops.op_conv_integer import ConvInteger
from systolic.reference.ops.op_systolic_qconvint import QConvInt


@pytest.mark.parametrize("x_type,z0,zero", [(np.uint8, 128, 201), (np.int8, 0, -7)])
@pytest.mark.parametrize("group", [1, 2])
def test_equals_conv_integer(x_type, z0, zero, group):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(group)
    info = np.iinfo(x_type)
    x = rng.integers(info.min, int(info.max) + 1, (2, 4, 6, 5)).astype(x_type)
    w = rng.integers(-128, 128, (6, 4 // group, 3, 3)).astype(np.int8)
    geometry = {"pads": (1, 0, 2, 1), "strides": (1, 2), "group": group}
    want = ConvInteger(Attrs(dict(geometry)), 10, "c").run([x, w, np.array(zero, x_type), None])[0]
    bias = ((z0 - zero) * w.astype(np.int64).reshape(6, -1).sum(axis=1)).astype(np.int32)
    op = QConvInt(Attrs({**geometry, "x_zero_point": zero}), 1, "q")
    got = op.run([x, w, bias])[0]
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)


def test_checks():  # type: ignore[no-untyped-def]
    op = QConvInt(Attrs({"pads": (1, 1, 1, 1)}), 1, "q")
    out = op.infer([TensorInfo(DataType.UINT8, (1, 3, 5, 5)), TensorInfo(DataType.INT8, (4, 3, 3, 3))])
    assert out[0].dtype == DataType.INT32 and out[0].shape == (1, 4, 5, 5)
    with pytest.raises(ModelError, match="W has element type"):
        op.infer([TensorInfo(DataType.UINT8, (1, 3, 5, 5)), TensorInfo(DataType.UINT8, (4, 3, 3, 3))])
    with pytest.raises(ModelError, match="B must be i32"):
        op.infer([TensorInfo(DataType.UINT8, (1, 3, 5, 5)), TensorInfo(DataType.INT8, (4, 3, 3, 3)),
                  TensorInfo(DataType.INT32, (3,))])
