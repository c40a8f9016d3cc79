import numpy as np
import onnx.defs
import pytest

from systolic.reference import registry

from ..oracle import rng, run_ours
from ..ort_oracle import check_ort, saturation_reason

CASES = [
    ((1, 3, 9, 8), (4, 3, 3, 3), {"pads": [1, 1, 1, 1]}),
    ((2, 4, 7, 7), (6, 2, 3, 2), {"group": 2, "strides": [2, 1], "pads": [0, 1, 2, 0]}),
    ((1, 8, 8, 8), (8, 1, 3, 3), {"group": 8, "pads": [1, 1, 1, 1]}),  # depthwise
    ((1, 16, 5, 5), (12, 16, 1, 1), {}),  # pointwise
    ((1, 2, 11), (3, 2, 4), {"auto_pad": "SAME_UPPER", "strides": [2]}),
]
# onnxruntime: x and y of one type; w int8 or uint8 for uint8 x, int8 for int8 x.
PAIRS = [(np.uint8, np.uint8), (np.uint8, np.int8), (np.int8, np.int8)]


def ints(r, dtype, shape):
    info = np.iinfo(dtype)
    return r.integers(info.min, info.max + 1, shape).astype(dtype)


def inputs(r, x_type, w_type, x_shape, w_shape, *, scale, per_channel, w_zp, bias):
    x, w = ints(r, x_type, x_shape), ints(r, w_type, w_shape)
    m = w_shape[0]
    shape = (m,) if per_channel else ()
    w_scale = (10 ** r.uniform(-3, 0, shape)).astype(np.float32)
    w_zero = np.full(shape, w_zp, w_type)
    x_scale = np.float32(scale)
    depth = int(np.prod(w_shape[1:]))
    y_scale = np.float32(scale * np.max(w_scale) * np.sqrt(depth) * 60)
    b = r.integers(-20000, 20000, m).astype(np.int32) if bias else None
    return [x, x_scale, ints(r, x_type, ()), w, w_scale, w_zero, y_scale,
            ints(r, x_type, ()), b]


def test_since_versions_follow_onnx_schema_history():
    history = sorted({s.since_version for s in onnx.defs.get_all_schemas_with_history()
                      if s.name == "QLinearConv" and s.domain == ""})
    assert registry.versions_of("", "QLinearConv") == history


@pytest.mark.parametrize(("x_shape", "w_shape", "attrs"), CASES)
@pytest.mark.parametrize(("x_type", "w_type"), PAIRS)
@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_matches_onnxruntime(x_shape, w_shape, attrs, x_type, w_type, per_channel, bias):
    r = rng(41)
    w_zp = 0 if w_type == np.int8 else 128
    ins = inputs(r, x_type, w_type, x_shape, w_shape, scale=0.02, per_channel=per_channel,
                 w_zp=w_zp, bias=bias)
    check_ort("QLinearConv", ins, attrs, opset=10, constant=[3, 4, 5, 8])


@pytest.mark.parametrize("scale", [1e-4, 10.0])
@pytest.mark.parametrize("w_zp", [-128, 0, 127])
def test_scales_and_weight_zero_points_match_onnxruntime(scale, w_zp):
    r = rng(42)
    ins = inputs(r, np.int8, np.int8, (1, 6, 6, 6), (5, 6, 3, 3), scale=scale,
                 per_channel=True, w_zp=w_zp, bias=True)
    check_ort("QLinearConv", ins, {"pads": [1, 1, 1, 1]}, opset=10, constant=[3, 4, 5, 8])


@pytest.mark.parametrize(("x_shape", "w_shape", "attrs"), CASES)
@pytest.mark.parametrize("per_channel", [False, True])
def test_uint8_int8_within_int16_pairs_matches_onnxruntime(x_shape, w_shape, attrs, per_channel):
    # int8 weights in [-64, 63]: every pair sum fits int16 (the padding holds x's zero point,
    # at most 255 too), so onnxruntime is exact on every CPU and compared here.
    r = rng(44)
    ins = inputs(r, np.uint8, np.int8, x_shape, w_shape, scale=0.02, per_channel=per_channel,
                 w_zp=0, bias=True)
    ins[3] = ins[3] // 2
    assert saturation_reason("QLinearConv", ins, attrs) is None
    check_ort("QLinearConv", ins, attrs, opset=10, constant=[3, 4, 5, 8])


def test_per_channel_weight_zero_points_are_exact():
    # onnxruntime needs one weight zero point for all channels; ONNX allows one per channel.
    # Oracle: ConvInteger-style exact accumulation, then the float32 requantization.
    r = rng(43)
    ins = inputs(r, np.uint8, np.uint8, (1, 3, 5, 5), (4, 3, 3, 3), scale=0.1,
                 per_channel=True, w_zp=0, bias=True)
    ins[5] = np.array([0, 17, 128, 255], np.uint8)
    (y,), _ = run_ours("QLinearConv", ins, {}, 10)
    (acc,), _ = run_ours("ConvInteger", [ins[0], ins[3], ins[2], ins[5]], {}, 10)
    acc = acc + ins[8].reshape(1, -1, 1, 1)
    mult = ((ins[1] * ins[4]) / ins[6]).astype(np.float32).reshape(1, -1, 1, 1)
    want = np.clip(np.rint(acc.astype(np.float32) * mult) + int(ins[7]), 0, 255)
    np.testing.assert_array_equal(y, want.astype(np.uint8))
