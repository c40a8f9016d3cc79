import numpy as np
import pytest

from systolic.errors import ModelError

from .systolic_oracle import average_pool, run

CASES = [((2, 2), (2, 2), (0, 0, 0, 0)), ((3, 3), (2, 2), (1, 1, 1, 1)),
         ((3, 2), (1, 2), (0, 1, 2, 0)), ((3,), (2,), (1, 1)), ((7, 7), (1, 1), (0, 0, 0, 0))]


@pytest.mark.parametrize(("kernel", "strides", "pads"), CASES)
@pytest.mark.parametrize(("x_type", "y_type"), [(np.uint8, np.uint8), (np.int8, np.int8),
                                                 (np.uint8, np.int8)])
@pytest.mark.parametrize("count_include_pad", [0, 1])
def test_matches_naive_average(kernel, strides, pads, x_type, y_type, count_include_pad):
    r = np.random.default_rng(9)
    xi, yi = np.iinfo(x_type), np.iinfo(y_type)
    x = r.integers(xi.min, xi.max + 1, (1, 3, *(7,) * len(kernel))).astype(x_type)
    attrs = {"kernel_shape": kernel, "strides": strides, "pads": pads,
             "count_include_pad": count_include_pad,
             "x_zero_point": int(r.integers(xi.min, xi.max + 1)),
             "y_zero_point": int(r.integers(yi.min, yi.max + 1)), "scale": 0.73,
             "y_type": 2 if y_type == np.uint8 else 3, "y_lo": int(yi.min) + 1}
    got = run("QAveragePool", attrs, x)
    want = average_pool(x, kernel=kernel, strides=strides, pads=pads,
                        count_include_pad=count_include_pad, x_zp=attrs["x_zero_point"],
                        scale=0.73, y_zp=attrs["y_zero_point"], lo=attrs["y_lo"],
                        hi=int(yi.max), dtype=y_type)
    assert got.dtype == y_type
    np.testing.assert_array_equal(got, want)


def test_hand_computed_global_average():
    x = np.array([[[[10, 11], [13, 14]]]], np.uint8)  # minus 10: sum 8, count 4: mean 2
    attrs = {"kernel_shape": (2, 2), "x_zero_point": 10, "y_zero_point": 3, "scale": 1.25,
             "y_type": 2}
    # 2 * 1.25 = 2.5 -> 2 (ties to even), + 3
    np.testing.assert_array_equal(run("QAveragePool", attrs, x), np.array([[[[5]]]], np.uint8))


def test_rejects_missing_scale():
    with pytest.raises(ModelError, match=r"scale must be set to a positive finite"):
        run("QAveragePool", {"kernel_shape": (2, 2), "y_type": 2}, np.zeros((1, 1, 2, 2),
                                                                           np.uint8))
