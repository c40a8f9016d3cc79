from fractions import Fraction

import numpy as np

from systolic.reference.kernels import quant

from ..oracle import rng


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
