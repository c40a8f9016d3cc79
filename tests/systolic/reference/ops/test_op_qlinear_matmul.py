import numpy as np
import onnx.defs
import pytest

from systolic.reference import registry

from ..oracle import rng, run_ours
from ..ort_oracle import check_ort, saturation_reason

# onnxruntime's kernels: a and y of one type; b int8 or uint8 for uint8 a, int8 for int8 a.
PAIRS = [(np.uint8, np.uint8), (np.uint8, np.int8), (np.int8, np.int8)]


def ints(r, dtype, shape, low=None, high=None):
    info = np.iinfo(dtype)
    return r.integers(info.min if low is None else low,
                      (info.max if high is None else high) + 1, shape).astype(dtype)


def case(r, a_type, b_type, a_shape, b_shape, *, scale, per_column=False, zp=None):
    """Inputs with y_scale set so outputs spread over the whole output range."""
    a, b = ints(r, a_type, a_shape), ints(r, b_type, b_shape)
    n = b_shape[-1]
    a_zp = ints(r, a_type, ()) if zp is None else np.array(zp[0], a_type)
    b_zp = ints(r, b_type, ()) if zp is None else np.array(zp[1], b_type)
    a_scale = np.float32(scale)
    b_scale = (10 ** r.uniform(-3, 0, n)).astype(np.float32) if per_column else \
        np.float32(10 ** r.uniform(-3, 0))
    k = a_shape[-1]
    y_scale = np.float32(scale * np.max(b_scale) * np.sqrt(k) * 60)
    y_zp = ints(r, a_type, ())
    return [a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp]


def test_since_versions_follow_onnx_schema_history():
    history = sorted({s.since_version for s in onnx.defs.get_all_schemas_with_history()
                      if s.name == "QLinearMatMul" and s.domain == ""})
    assert registry.versions_of("", "QLinearMatMul") == history


@pytest.mark.parametrize("opset", [10, 21])
@pytest.mark.parametrize(("a_type", "b_type"), PAIRS)
@pytest.mark.parametrize("scale", [1e-4, 0.02, 10.0])
@pytest.mark.parametrize(("a_shape", "b_shape"), [((9, 70), (70, 11)), ((2, 4, 33), (33, 6))])
def test_per_tensor_matches_onnxruntime(opset, a_type, b_type, scale, a_shape, b_shape):
    r = rng(11)
    check_ort("QLinearMatMul", case(r, a_type, b_type, a_shape, b_shape, scale=scale),
              opset=opset)


@pytest.mark.parametrize(("a_type", "b_type"), PAIRS)
def test_extreme_zero_points_match_onnxruntime(a_type, b_type):
    r = rng(12)
    for zp in ((np.iinfo(a_type).min, np.iinfo(b_type).max), (np.iinfo(a_type).max, 0)):
        check_ort("QLinearMatMul", case(r, a_type, b_type, (8, 50), (50, 8), scale=0.1, zp=zp),
                  opset=10)


@pytest.mark.parametrize(("a_type", "b_type"), PAIRS)
def test_per_column_scale_matches_onnxruntime(a_type, b_type):
    r = rng(13)
    inputs = case(r, a_type, b_type, (10, 64), (64, 12), scale=0.05, per_column=True)
    check_ort("QLinearMatMul", inputs, opset=10, constant=[3, 4, 5])


@pytest.mark.parametrize("per_column", [False, True])
@pytest.mark.parametrize("scale", [1e-4, 0.02])
def test_uint8_int8_within_int16_pairs_matches_onnxruntime(per_column, scale):
    # int8 values in [-64, 63]: every pair sum fits int16, so onnxruntime is exact on every
    # CPU and compared here, with or without VNNI.
    r = rng(15)
    inputs = case(r, np.uint8, np.int8, (9, 70), (70, 11), scale=scale, per_column=per_column)
    inputs[3] = inputs[3] // 2
    assert saturation_reason("QLinearMatMul", inputs) is None
    check_ort("QLinearMatMul", inputs, opset=10, constant=[3, 4, 5] if per_column else [])


def test_scale_order_is_onnxruntime_s():
    # Every product of two uint8 values, with scales chosen so that (a*b)/y, a*(b/y) and the
    # float64 quotient round to different float32 multipliers: only (a*b)/y matches.
    a = np.arange(256, dtype=np.uint8).reshape(256, 1)
    b = np.arange(256, dtype=np.uint8).reshape(1, 256)
    a_scale, b_scale = np.float32(0.0123), np.float32(0.00471)
    y_scale = np.float32(a_scale * b_scale * 257.3)
    assert (a_scale * b_scale) / y_scale != a_scale * (b_scale / y_scale)
    zero = np.uint8(0)
    check_ort("QLinearMatMul", [a, a_scale, zero, b, b_scale, zero, y_scale, zero], opset=10)


def test_per_row_a_scale_is_exact_integer_math():
    # onnxruntime rejects per-row a_scale; the oracle is the formula in exact arithmetic
    # (float32 multiplier, product rounded once), which ours must equal.
    r = rng(14)
    a, b = ints(r, np.uint8, (5, 20)), ints(r, np.int8, (20, 3))
    a_scale = np.array([0.01, 0.02, 0.03, 0.04, 0.05], np.float32)
    a_zp = ints(r, np.uint8, (5,))
    b_scale, b_zp = np.float32(0.02), np.int8(3)
    y_scale, y_zp = np.float32(0.9), np.uint8(100)
    (y,), _ = run_ours("QLinearMatMul", [a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp],
                       {}, 10)
    acc = (a.astype(np.int64) - a_zp[:, None]) @ (b.astype(np.int64) - 3)
    mult = ((a_scale * b_scale) / y_scale).astype(np.float32)[:, None]
    want = np.clip(np.rint(acc.astype(np.float32) * mult) + 100, 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(y, want)
