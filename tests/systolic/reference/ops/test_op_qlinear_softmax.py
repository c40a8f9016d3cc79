import numpy as np
import pytest

from systolic.errors import ModelError

from ..oracle import make_op, rng
from ..ort_oracle import check_ort

MS = "com.microsoft"

CASES = [
    # (shape, axis, opset attribute): single axis (13) and 2-D coercion (before 13)
    ((1, 10), -1, 13),  # one row
    ((2, 1024), -1, 13),  # a long row
    ((2, 3, 5), 1, 13),  # the axis is not the last one
    ((2, 3, 5), 0, 13),
    ((2, 3, 5), 1, 12),  # rows are the flattened axes 1 and 2
    ((2, 3, 4), 2, 1),
    ((4, 7), None, 13),  # default axis -1
    ((4, 3, 2), None, 12),  # default axis 1
    ((3, 1), -1, 13),  # one-element rows: the ratio overflows float32 for Y_scale 1/256
]


def quant_params(r, dtype, i):
    info = np.iinfo(dtype)
    x_scale = np.float32(10 ** r.uniform(-3, 0))
    y_scale = np.float32(1 / 256) if i == 0 else np.float32(10 ** r.uniform(-3, -1.5))
    x_zp = np.array(r.integers(info.min, info.max + 1), dtype)
    y_zp = np.array(info.min if i < 2 else r.integers(info.min, info.max + 1), dtype)
    return x_scale, x_zp, y_scale, y_zp


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize(("shape", "axis", "opset"), CASES)
def test_qlinear_softmax_equals_onnxruntime(dtype, shape, axis, opset):
    r = rng(83)
    info = np.iinfo(dtype)
    attrs = {"opset": opset} if axis is None else {"opset": opset, "axis": axis}
    for i in range(5):
        x = r.integers(info.min, info.max + 1, shape).astype(dtype)
        x_scale, x_zp, y_scale, y_zp = quant_params(r, dtype, i)
        check_ort("QLinearSoftmax", [x, x_scale, x_zp, y_scale, y_zp], attrs, opset=13,
                  domain=MS)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_qlinear_softmax_without_x_zero_point_equals_onnxruntime(dtype):
    x = rng(84).integers(0, 100, (3, 16)).astype(dtype)
    y_zp = np.array(np.iinfo(dtype).min, dtype)
    check_ort("QLinearSoftmax", [x, np.float32(0.05), None, np.float32(1 / 256), y_zp],
              {"opset": 13}, opset=13, domain=MS)


def test_qlinear_softmax_needs_the_opset_attribute():
    with pytest.raises(ModelError, match=r"required attribute 'opset' .* set opset=13"):
        make_op("QLinearSoftmax", {"axis": 1}, 1, domain=MS)
