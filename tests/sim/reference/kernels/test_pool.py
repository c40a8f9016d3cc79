import numpy as np
from systolic.sim.reference.kernels.pool import pool_windows, window_counts


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
