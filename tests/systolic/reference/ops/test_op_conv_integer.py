import numpy as np
import onnx.defs
import pytest

from systolic.reference import registry

from ..oracle import rng, run_ours
from ..ort_oracle import check_ort

CASES = [
    ((1, 3, 9, 8), (4, 3, 3, 3), {"pads": [1, 1, 1, 1]}),
    ((2, 4, 7, 7), (6, 2, 3, 2), {"group": 2, "strides": [2, 1], "pads": [0, 1, 2, 0]}),
    ((1, 4, 8, 8), (4, 1, 3, 3), {"group": 4, "dilations": [2, 2]}),
    ((1, 2, 11), (3, 2, 4), {"auto_pad": "SAME_UPPER", "strides": [2]}),
]


def ints(r, dtype, shape):
    info = np.iinfo(dtype)
    return r.integers(info.min, info.max + 1, shape).astype(dtype)


def test_since_versions_follow_onnx_schema_history():
    history = sorted({s.since_version for s in onnx.defs.get_all_schemas_with_history()
                      if s.name == "ConvInteger" and s.domain == ""})
    assert registry.versions_of("", "ConvInteger") == history


@pytest.mark.parametrize(("x_shape", "w_shape", "attrs"), CASES)
@pytest.mark.parametrize("zero_points", [None, (0, 0), (255, 255), (131, 7)])
def test_uint8_matches_onnxruntime(x_shape, w_shape, attrs, zero_points):
    # onnxruntime's ConvInteger kernel takes uint8 x and uint8 w only.
    r = rng(31)
    x, w = ints(r, np.uint8, x_shape), ints(r, np.uint8, w_shape)
    extra = [] if zero_points is None else [np.uint8(zero_points[0]), np.uint8(zero_points[1])]
    check_ort("ConvInteger", [x, w, *extra], attrs, opset=10)


@pytest.mark.parametrize(("x_type", "w_type"), [(np.int8, np.int8), (np.uint8, np.int8)])
def test_signed_and_per_channel_are_exact(x_type, w_type):
    # Oracle: exact integer convolution (a direct loop) with per-output-channel zero points.
    r = rng(32)
    x, w = ints(r, x_type, (1, 2, 6, 5)), ints(r, w_type, (3, 2, 2, 3))
    x_zp, w_zp = ints(r, x_type, ()), ints(r, w_type, (3,))
    (y,), _ = run_ours("ConvInteger", [x, w, x_zp, w_zp], {"pads": [1, 0, 0, 1]}, 10)
    xd = np.pad(x.astype(np.int64) - int(x_zp), [(0, 0), (0, 0), (1, 0), (0, 1)])
    wd = w.astype(np.int64) - w_zp.astype(np.int64)[:, None, None, None]
    want = np.zeros((1, 3, 6, 4), np.int64)
    for m in range(3):
        for i in range(6):
            for j in range(4):
                want[0, m, i, j] = np.sum(xd[0, :, i:i + 2, j:j + 3] * wd[m])
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, want)
