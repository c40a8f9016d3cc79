from fractions import Fraction

import numpy as np
import pytest
from systolic.sim.reference import quant

from .oracle import rng


def test_round_half_to_even():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.4999, -3.5001], np.float32)
    np.testing.assert_array_equal(quant.round_half_to_even(x), [-2, -2, -0, 0, 2, 2, 2, -4])


def test_saturate_clamps_and_maps_nan_to_lowest():
    x = np.array([-1e9, -129, 300, 5, np.nan])
    np.testing.assert_array_equal(quant.saturate(x, np.int8), [-128, -128, 127, 5, -128])
    np.testing.assert_array_equal(quant.saturate(np.array([-3, 70000]), np.uint16), [0, 65535])


def test_quantize_dequantize_per_axis():
    x = np.array([[0.25, -1.0], [3.0, 10.0]], np.float32)
    scale = np.array([0.5, 2.0], np.float32)
    q = quant.quantize(x, scale, np.array([10, -3], np.int8), axis=0, dtype=np.int8)
    np.testing.assert_array_equal(q, [[10, 8], [-1, 2]])  # 0.5 and 1.5 round to even
    np.testing.assert_array_equal(
        quant.dequantize(q, scale, np.array([10, -3], np.int8), axis=0), [[0, -1], [4, 10]])


def exact_rounding(acc, multiplier, shift):
    """rint(acc * multiplier / 2**(31 + shift)) in exact rational arithmetic."""
    out = []
    for a in acc.reshape(-1).tolist():
        value = Fraction(a * multiplier, 2 ** (31 + shift))
        floor = value.numerator // value.denominator
        rest = value - floor
        out.append(floor + (rest > Fraction(1, 2) or (rest == Fraction(1, 2) and floor % 2)))
    return np.array(out, np.int64).reshape(acc.shape)


@pytest.mark.parametrize("real", [1e-9, 2.0**-40, 1e-4, 0.0123, 0.5, 0.75, 1.0, 3.999, 1e3])
def test_quantize_multiplier_is_exact_for_float32(real):
    m, shift = quant.quantize_multiplier(float(np.float32(real)))
    assert 2**30 <= m < 2**31
    assert Fraction(m, 2 ** (31 + shift)) == Fraction(float(np.float32(real)))


def test_quantize_multiplier_rounds_up_into_range():
    m, shift = quant.quantize_multiplier(1.0 - 2.0**-40)  # significand rounds to 2**31
    assert (m, shift) == (2**30, -1)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("inf"), float("nan"), 2.0**31])
def test_quantize_multiplier_rejects(bad):
    with pytest.raises(ValueError, match=r"^a requantization multiplier must be finite"):
        quant.quantize_multiplier(bad)


def test_fixed_point_is_exact_rounding():
    r = rng(1)
    acc = np.concatenate([r.integers(-(2**31), 2**31, 500), [-(2**31), 2**31 - 1, 0, 1, -1]])
    for real in 10 ** r.uniform(-12, 3, 20):
        m, shift = quant.quantize_multiplier(float(real))
        got = quant.requantize_fixed_point(acc, m, shift, 0, np.int32)
        want = np.clip(exact_rounding(acc, m, shift), -(2**31), 2**31 - 1)
        np.testing.assert_array_equal(got, want)


def test_fixed_point_ties_round_to_even():
    acc = np.array([1, 3, 5, -1, -3, 2, 6], np.int32)  # times 0.5: ties everywhere
    m, shift = quant.quantize_multiplier(0.5)
    got = quant.requantize_fixed_point(acc, m, shift, 0, np.int8)
    np.testing.assert_array_equal(got, [0, 2, 2, -0, -2, 1, 3])


def test_fixed_point_clamps_and_offsets():
    m, shift = quant.quantize_multiplier(1.0)
    acc = np.array([-300, -5, 0, 5, 300], np.int32)
    got = quant.requantize_fixed_point(acc, m, shift, 10, np.uint8, clamp_min=10)
    np.testing.assert_array_equal(got, [10, 10, 10, 15, 255])


def test_fixed_point_against_float_formula_over_many_scales():
    # The float32 path (onnxruntime's) rounds float32(acc) and the float32 product before
    # rint; the fixed-point path rounds once, exactly. Where the float path is exact they
    # must agree; elsewhere they may differ by 1, rarely.
    r = rng(2)
    mismatches = total = 0
    for real in np.float32(10 ** r.uniform(-6, 0.5, 300)):
        acc = r.integers(-(2**24), 2**24, 2000).astype(np.int32)
        acc = np.concatenate([acc, np.rint((np.arange(-200, 200) + 0.5) / real)
                              .clip(-(2**24), 2**24).astype(np.int32)])
        m, shift = quant.quantize_multiplier(float(real))
        fixed = quant.requantize_fixed_point(acc, m, shift, 0, np.int16)
        floating = quant.requantize(acc, real, 0, np.int16)
        product = acc.astype(np.longdouble) * np.longdouble(real)  # exact: 64-bit significand
        float_exact = product == (acc.astype(np.float32) * real).astype(np.longdouble)
        diff = np.abs(fixed.astype(np.int64) - floating)
        assert not np.any(diff[float_exact]), "must agree where the float path is exact"
        assert diff.max() <= 1
        mismatches += int(np.count_nonzero(diff[:2000]))  # the uniformly random part
        total += 2000
    assert mismatches / total < 2e-4  # measured: 62 of 600000 (1.0e-4)


def test_per_channel_fixed_point_broadcasts():
    acc = np.array([[100, -100], [7, 9]], np.int32)
    params = [quant.quantize_multiplier(s) for s in (0.1, 0.25)]
    m = np.array([p[0] for p in params]).reshape(1, 2)
    shift = np.array([p[1] for p in params]).reshape(1, 2)
    got = quant.requantize_fixed_point(acc, m, shift, 0, np.int8)
    np.testing.assert_array_equal(got, [[10, -25], [1, 2]])


def test_fma_float32_rounds_once():
    r = rng(3)
    x = r.integers(-255, 256, 100000).astype(np.float32)
    y = np.float32(10 ** r.uniform(-3, 1, 100000)).astype(np.float32)
    z = np.float32(r.uniform(-300, 300, 100000)).astype(np.float32)
    got = quant.fma_float32(x, y, z)
    for i in range(0, 100000, 997):
        exact = Fraction(float(x[i])) * Fraction(float(y[i])) + Fraction(float(z[i]))
        below = np.float32(float(exact))  # nearest float64, then float32: check neighbours
        candidates = [np.nextafter(below, np.float32(-np.inf)), below,
                      np.nextafter(below, np.float32(np.inf))]
        best = min(candidates, key=lambda c: (abs(Fraction(float(c)) - exact),
                                              int(np.float32(c).view(np.int32)) & 1))
        assert got[i] == best
