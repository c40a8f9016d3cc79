"""com.microsoft QLinearAveragePool against onnxruntime, bit-exact, over a grid of geometries,
both 8-bit types, both layouts, and scales from tiny to large."""

import numpy as np
import pytest

from systolic.errors import ModelError
from systolic.ir import DataType
from systolic.reference.ops.base import TensorInfo

from ..oracle import make_op, rng, run_ours
from ..ort_oracle import check_ort, run_ort

MS = "com.microsoft"

# (NCHW input shape, attributes): 1-D, 2-D and 3-D windows; strides, explicit and automatic
# padding, ceil mode (with windows running past the end padding), count_include_pad, and
# kernels covering the whole image (onnxruntime's global-average fallback).
GEOMETRIES = [
    ((2, 3, 9), {"kernel_shape": [3]}),
    ((1, 4, 10), {"kernel_shape": [4], "strides": [3], "pads": [1, 2], "ceil_mode": 1}),
    ((1, 2, 8, 8), {"kernel_shape": [2, 2], "strides": [2, 2]}),
    ((2, 3, 7, 9), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    ((1, 4, 7, 7), {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 0, 2, 1]}),
    ((1, 3, 7, 8), {"kernel_shape": [3, 3], "strides": [2, 3], "ceil_mode": 1}),
    ((1, 3, 6, 7), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1],
                    "ceil_mode": 1}),
    ((1, 5, 6, 6), {"kernel_shape": [5, 5], "auto_pad": "SAME_UPPER"}),
    ((1, 5, 6, 5), {"kernel_shape": [2, 4], "strides": [2, 2], "auto_pad": "SAME_LOWER"}),
    ((1, 2, 6, 6), {"kernel_shape": [3, 3], "auto_pad": "VALID", "strides": [3, 1]}),
    ((1, 6, 5, 5), {"kernel_shape": [5, 5]}),
    ((2, 3, 4, 6), {"kernel_shape": [4, 6], "strides": [2, 2]}),
    ((1, 2, 4, 5, 6), {"kernel_shape": [2, 3, 2], "strides": [2, 1, 2], "pads": [1, 0, 1, 0, 1, 1]}),
    ((1, 2, 5, 4, 4), {"kernel_shape": [3, 2, 3], "strides": [2, 2, 2], "ceil_mode": 1}),
]
SCALES = [(0.02, 0.013), (1e-4, 3e-5), (7.5, 11.0)]


def _to_channels_last(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.moveaxis(x, 1, -1))


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("channels_last", [0, 1])
@pytest.mark.parametrize("count_include_pad", [0, 1])
@pytest.mark.parametrize(("shape", "attrs"), GEOMETRIES)
def test_matches_onnxruntime(dtype, channels_last, count_include_pad, shape, attrs):
    r = rng(83)
    info = np.iinfo(dtype)
    attrs = {**attrs, "channels_last": channels_last, "count_include_pad": count_include_pad}
    for x_scale, y_scale in SCALES:
        for x_zp, y_zp in ((info.min, info.max), (0, 0), (int(r.integers(info.min, info.max)), 5)):
            x = r.integers(info.min, info.max + 1, shape).astype(dtype)
            if channels_last:
                x = _to_channels_last(x)
            check_ort("QLinearAveragePool",
                      [x, np.float32(x_scale), np.array(x_zp, dtype), np.float32(y_scale),
                       np.array(y_zp, dtype)], attrs, opset=13, domain=MS)


def test_omitted_zero_points_mean_zero():
    """onnxruntime accepts an omitted y_zero_point but its type inference rejects an omitted
    x_zero_point, so ours without either is compared with onnxruntime given x_zero_point 0."""
    x = rng(84).integers(0, 256, (1, 3, 6, 6)).astype(np.uint8)
    attrs = {"kernel_shape": [3, 3], "strides": [1, 2], "pads": [1, 1, 1, 1]}
    check_ort("QLinearAveragePool", [x, np.float32(0.05), np.uint8(7), np.float32(0.04)], attrs, opset=13, domain=MS)
    (ours,), _ = run_ours("QLinearAveragePool", [x, np.float32(0.05), None, np.float32(0.04),
                                                 None], attrs, 1, domain=MS)
    (want,) = run_ort("QLinearAveragePool", [x, np.float32(0.05), np.uint8(0), np.float32(0.04)],
                      attrs, opset=13, domain=MS)
    np.testing.assert_array_equal(ours, want)


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        ({"kernel_shape": [2, 2], "dilations": [2, 2]}, "no 'dilations'"),
        ({"kernel_shape": [2, 2], "pads": [2, 0, 0, 0]}, "smaller than kernel_shape"),
        ({"kernel_shape": [1, 1, 1, 1]}, "at most 3 spatial axes"),
        ({}, "kernel_shape"),
    ],
)
def test_invalid_attributes_are_model_errors(attrs, message):
    with pytest.raises(ModelError, match=message):
        op = make_op("QLinearAveragePool", attrs, 1, domain=MS)
        scale = TensorInfo(DataType.FLOAT, ())
        zp = TensorInfo(DataType.UINT8, ())
        op.infer([TensorInfo(DataType.UINT8, (1, 2, 5, 5)), scale, zp, scale, zp])
