import numpy as np
import pytest

from ..oracle import rng, run_ours
from ..ort_oracle import check_ort

MS = "com.microsoft"


def every_pair(dtype):
    """A and B holding every pair of values of `dtype` (65536 elements)."""
    info = np.iinfo(dtype)
    values = np.arange(info.min, info.max + 1)
    return np.repeat(values, values.size).astype(dtype), np.tile(values, values.size).astype(dtype)


def params(r, dtype):
    info = np.iinfo(dtype)
    sa, sb = (np.float32(10 ** r.uniform(-3, 0)) for _ in range(2))
    sc = np.float32(max(sa, sb) * r.uniform(0.3, 3))
    za, zb, zc = (np.array(r.integers(info.min, info.max + 1), dtype) for _ in range(3))
    return sa, za, sb, zb, sc, zc


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_every_value_pair_matches_onnxruntime(op, dtype):
    r = rng(51)
    a, b = every_pair(dtype)
    for _ in range(6):
        sa, za, sb, zb, sc, zc = params(r, dtype)
        if op == "QLinearMul":
            sc = np.float32(sa * sb * r.uniform(30, 300))
        check_ort(op, [a, sa, za, b, sb, zb, sc, zc], opset=13, domain=MS)


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize(("a_shape", "b_shape"), [
    ((2, 3, 4, 5), (1, 3, 1, 1)), ((1, 3, 1, 1), (2, 3, 4, 5)), ((4, 1), (1, 6)),
    ((1,), (3, 7)), ((3, 7), ()), ((2, 5, 8), (5, 8)),
])
def test_broadcasting_matches_onnxruntime(op, a_shape, b_shape):
    r = rng(52)
    for dtype in (np.uint8, np.int8):
        info = np.iinfo(dtype)
        for _ in range(4):
            a = r.integers(info.min, info.max + 1, a_shape).astype(dtype)
            b = r.integers(info.min, info.max + 1, b_shape).astype(dtype)
            sa, za, sb, zb, sc, zc = params(r, dtype)
            check_ort(op, [a, sa, za, b, sb, zb, sc, zc], opset=13, domain=MS)


def test_omitted_zero_points_mean_zero():
    # onnxruntime's type inference rejects omitted zero points; ONNX's contract is zero.
    a, b = every_pair(np.uint8)
    zero = np.uint8(0)
    scales = [np.float32(0.02), np.float32(0.03), np.float32(0.04)]
    (ours,), _ = run_ours("QLinearAdd", [a, scales[0], None, b, scales[1], None, scales[2]],
                          {}, 1, domain=MS)
    want = check_ort("QLinearAdd", [a, scales[0], zero, b, scales[1], zero, scales[2], zero],
                     opset=13, domain=MS)
    np.testing.assert_array_equal(ours, want)
