import numpy as np
import pytest

from systolic.errors import ModelError

from .systolic_oracle import max_pool, run

CASES = [((2, 2), (2, 2), (0, 0, 0, 0)), ((3, 3), (2, 2), (1, 1, 1, 1)),
         ((3, 2), (1, 2), (0, 1, 2, 0)), ((3,), (2,), (1, 1))]


@pytest.mark.parametrize(("kernel", "strides", "pads"), CASES)
@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_matches_naive_max_over_input_cells(kernel, strides, pads, dtype):
    r = np.random.default_rng(3)
    info = np.iinfo(dtype)
    x = r.integers(info.min, info.max + 1, (2, 3, *(7,) * len(kernel))).astype(dtype)
    lo, hi = int(info.min) + 40, int(info.max) - 30
    attrs = {"kernel_shape": kernel, "strides": strides, "pads": pads, "y_lo": lo, "y_hi": hi}
    got = run("QMaxPool", attrs, x)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, max_pool(x, kernel=kernel, strides=strides, pads=pads,
                                                lo=lo, hi=hi))


def test_padding_never_wins():
    x = np.array([[[[-100, -90], [-80, -70]]]], np.int8)
    y = run("QMaxPool", {"kernel_shape": (2, 2), "pads": (1, 1, 1, 1)}, x)
    np.testing.assert_array_equal(y, np.array([[[[-100, -90, -90], [-80, -70, -70],
                                                  [-80, -70, -70]]]], np.int8))


def test_rejects_pads_as_large_as_the_kernel():
    with pytest.raises(ModelError, match=r"pads \[2, 0, 0, 0\] must be smaller than"):
        run("QMaxPool", {"kernel_shape": (2, 2), "pads": (2, 0, 0, 0)},
            np.zeros((1, 1, 4, 4), np.int8))
