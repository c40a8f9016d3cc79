import numpy as np
import pytest

from systolic.errors import ModelError

from .systolic_oracle import conv, run

CASES = [  # x shape, w shape, strides, pads, dilations, group
    ((1, 3, 7, 6), (4, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    ((2, 4, 7, 7), (6, 2, 3, 2), (2, 1), (0, 1, 2, 0), (1, 1), 2),
    ((1, 4, 6, 6), (4, 1, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 4),  # depthwise
    ((1, 3, 8, 8), (2, 3, 2, 2), (1, 1), (0, 0, 0, 0), (2, 3), 1),
    ((1, 2, 11), (3, 2, 4), (2,), (1, 2), (1,), 1),  # 1-D
]
TYPES = [(np.uint8, np.uint8), (np.uint8, np.int8), (np.int8, np.int8), (np.int8, np.uint8)]


def attrs_for(r, m, x_type, y_type, strides, pads, dilations, group):
    xi, yi = np.iinfo(x_type), np.iinfo(y_type)
    return {
        "strides": strides, "pads": pads, "dilations": dilations, "group": group,
        "x_zero_point": int(r.integers(xi.min, xi.max + 1)),
        "multiplier": tuple(int(v) for v in r.integers(2**30, 2**31, m)),
        "shift": tuple(int(v) for v in r.integers(8, 14, m)),
        "y_zero_point": int(r.integers(yi.min, yi.max + 1)),
        "y_type": 2 if y_type == np.uint8 else 3,
        "y_lo": int(yi.min) + 3, "y_hi": int(yi.max) - 5,
    }


@pytest.mark.parametrize(("x_shape", "w_shape", "strides", "pads", "dilations", "group"), CASES)
@pytest.mark.parametrize(("x_type", "y_type"), TYPES)
@pytest.mark.parametrize("bias", [False, True])
def test_matches_naive_exact_convolution(x_shape, w_shape, strides, pads, dilations, group,
                                         x_type, y_type, bias):
    r = np.random.default_rng(7)
    xi = np.iinfo(x_type)
    x = r.integers(xi.min, xi.max + 1, x_shape).astype(x_type)
    w = r.integers(-128, 128, w_shape).astype(np.int8)
    b = r.integers(-30000, 30000, w_shape[0]).astype(np.int32) if bias else None
    attrs = attrs_for(r, w_shape[0], x_type, y_type, strides, pads, dilations, group)
    got = run("QConv", attrs, x, w, *([b] if bias else []))
    want = conv(x, w, b, strides=strides, pads=pads, dilations=dilations, group=group,
                x_zp=attrs["x_zero_point"], mult=attrs["multiplier"], shift=attrs["shift"],
                y_zp=attrs["y_zero_point"], lo=attrs["y_lo"], hi=attrs["y_hi"], dtype=y_type)
    assert got.dtype == y_type
    np.testing.assert_array_equal(got, want)


def test_hand_computed_one_by_one_conv():
    # acc = (x - 10) * 3 + 5; M = 2**30, s = 0: y = round_half_even(acc / 2) + 100.
    x = np.array([[[[10, 11], [12, 13]]]], np.uint8)
    w = np.array([[[[3]]]], np.int8)
    b = np.array([5], np.int32)
    attrs = {"x_zero_point": 10, "multiplier": (2**30,), "shift": (0,), "y_zero_point": 100,
             "y_type": 2}
    y = run("QConv", attrs, x, w, b)
    # acc = 5, 8, 11, 14 -> 2.5, 4, 5.5, 7 -> 2, 4, 6, 7 (ties to even)
    np.testing.assert_array_equal(y, np.array([[[[102, 104], [106, 107]]]], np.uint8))


def test_padding_holds_the_input_zero_point():
    x = np.full((1, 1, 2, 2), 50, np.uint8)
    w = np.ones((1, 1, 3, 3), np.int8)
    attrs = {"pads": (1, 1, 1, 1), "x_zero_point": 50, "multiplier": (2**30,), "shift": (-1,),
             "y_zero_point": 7, "y_type": 2}
    np.testing.assert_array_equal(run("QConv", attrs, x, w), np.full((1, 1, 2, 2), 7, np.uint8))


def test_clamp_bounds_apply_after_the_zero_point():
    x = np.array([[[[0, 255]]]], np.uint8)
    w = np.array([[[[1]]]], np.int8)
    attrs = {"x_zero_point": 128, "multiplier": (2**30,), "shift": (-1,), "y_zero_point": -3,
             "y_type": 3, "y_lo": -3, "y_hi": 60}
    np.testing.assert_array_equal(run("QConv", attrs, x, w), np.array([[[[-3, 60]]]], np.int8))


def test_rejects_multiplier_count_mismatch():
    x = np.zeros((1, 2, 3, 3), np.uint8)
    w = np.zeros((3, 2, 1, 1), np.int8)
    attrs = {"multiplier": (2**30,), "shift": (0,), "y_type": 2}
    with pytest.raises(ModelError, match=r"multiplier and shift need 3 values"):
        run("QConv", attrs, x, w)


def test_rejects_bounds_outside_the_output_type():
    with pytest.raises(ModelError, match=r"y_lo -1 is outside the output type's range"):
        run("QConv", {"multiplier": (2**30,), "shift": (0,), "y_type": 2, "y_lo": -1},
            np.zeros((1, 1, 1, 1), np.uint8), np.zeros((1, 1, 1, 1), np.int8))
