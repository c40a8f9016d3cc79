import numpy as np
import pytest

from systolic.reference.kernels.pool import pool_windows, window_counts, window_max


def test_windows_cover_padding_and_ceil_overshoot():
    x = np.arange(5, dtype=np.float32).reshape(1, 1, 5)
    win = pool_windows(x, (2,), (2,), (1, 0), (1,), ceil_mode=True, fill=-1.0)
    # windows start at -1, 1, 3; the last one would reach index 5, past the input: fill.
    np.testing.assert_array_equal(win[0, 0], [[-1, 0], [1, 2], [3, 4]])


def test_counts_exclude_overshoot_and_optionally_pads():
    args = ((5,), (3,), (2,), (1, 1), (1,))
    np.testing.assert_array_equal(window_counts(*args, ceil_mode=True, count_pads=False),
                                  [2, 3, 2])
    np.testing.assert_array_equal(window_counts(*args, ceil_mode=True, count_pads=True),
                                  [3, 3, 3])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8, np.uint8])
@pytest.mark.parametrize(("kernel", "strides", "pads", "dilations", "ceil_mode"), [
    ((2, 2), (2, 2), (0, 0, 0, 0), (1, 1), False),
    ((3, 3), (2, 2), (1, 1, 1, 1), (1, 1), True),
    ((3, 2), (1, 2), (0, 1, 2, 0), (2, 1), False),
    ((3,), (2,), (1, 1), (2,), True),
    ((2, 2, 2), (1, 2, 1), (1, 0, 0, 0, 1, 1), (1, 1, 2), False),
])
def test_window_max_equals_the_reduction_over_windows(dtype, kernel, strides, pads, dilations,
                                                      ceil_mode):
    r = np.random.default_rng(71)
    x = r.standard_normal((2, 3, *(9,) * len(kernel))) * 50
    if np.dtype(dtype).kind == "f":
        x[r.random(x.shape) < 0.2] = 0.0
        x[r.random(x.shape) < 0.2] = -0.0  # the sign of a zero maximum must match too
        x[r.random(x.shape) < 0.02] = np.nan
        fill = -np.inf
    else:
        fill = np.iinfo(dtype).min
    x = x.astype(dtype)
    windows = pool_windows(x, kernel, strides, pads, dilations, ceil_mode=ceil_mode, fill=fill)
    axes = tuple(range(windows.ndim - len(kernel), windows.ndim))
    expected = np.ascontiguousarray(windows.max(axis=axes))
    got = window_max(x, kernel, strides, pads, dilations, ceil_mode=ceil_mode, fill=fill)
    assert got.dtype == x.dtype and got.shape == expected.shape
    assert got.tobytes() == expected.tobytes()
